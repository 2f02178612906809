# Included at install time (install(CODE) in FerryPackage.cmake): in every installed
# Markdown file under DOC_DIR, a relative link whose target was not installed (a
# test's README, a source file) becomes its text followed by where it lives in
# ferry's source tree, so the installed docs hold no broken link.
# By hand: cmake -DDOC_DIR=/usr/share/doc/ferry -P cmake/RewriteDocLinks.cmake
if(NOT IS_DIRECTORY "${DOC_DIR}")
  message(FATAL_ERROR "RewriteDocLinks: DOC_DIR '${DOC_DIR}' is not a folder")
endif()
file(GLOB_RECURSE docs "${DOC_DIR}/*.md")
foreach(doc IN LISTS docs)
  file(READ "${doc}" text)
  get_filename_component(here "${doc}" DIRECTORY)
  file(RELATIVE_PATH doc_rel "${DOC_DIR}" "${here}")
  # Brackets would split a CMake list oddly: mark each link's start, drop the rest.
  string(REPLACE "](" "<link>" marked "${text}")
  string(REGEX REPLACE "[][;]" " " marked "${marked}")
  string(REGEX MATCHALL "<link>[^)# ]+" links "${marked}")
  list(REMOVE_DUPLICATES links)
  set(changed FALSE)
  foreach(link IN LISTS links)
    string(SUBSTRING "${link}" 6 -1 target)
    if(target MATCHES "^[a-z]+:" OR EXISTS "${here}/${target}")
      continue()
    endif()
    # Where the source tree has it, from the top: docs/../tests/x.md -> tests/x.md.
    get_filename_component(source_path "/${doc_rel}/${target}" ABSOLUTE)
    string(REGEX REPLACE "^/+" "" source_path "${source_path}")
    string(REGEX REPLACE "([][+.*?^$()|\\\\])" "\\\\\\1" quoted "${target}")
    string(REGEX REPLACE "\\[([^]]*)\\]\\(${quoted}(#[^)]*)?\\)" "\\1 (in ferry's source tree: ${source_path})"
           text "${text}")
    set(changed TRUE)
  endforeach()
  if(changed)
    file(WRITE "${doc}" "${text}")
  endif()
endforeach()
