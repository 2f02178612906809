# Install rules and the Debian package (`make package`, or `cpack -G DEB` in the build
# folder). The layout an installed ferry expects (base/file_util.h, companion_path):
#   bin/ferry, bin/ferry-tiny-models         what a user runs
#   lib/ferry/ferry-agent                    the static agent ferry starts or ships to hosts
#   lib/ferry/libferry-eval.so, ferry-eval   the eval plugin and the eval worker (torch)
#   lib/ferry/dflash-*                       the demo's training programs (torch)
#   share/doc/ferry/                         README, docs/, workflows/README.md, jobs/*/README.md,
#                                            examples/, copyright: the source tree's layout, so links work
#   share/bash-completion/completions/ferry  `ferry completion bash`
include(GNUInstallDirs)
# Not CMAKE_INSTALL_LIBDIR: with prefix /usr that is lib/<multiarch>, and ferry looks in
# ../lib/ferry from its own folder.
set(ferry_libdir lib/ferry)
# cpack and `make install` install what is built, and build nothing (not every test
# first): `make package` builds, and the package test reuses that build.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

install(TARGETS ferry RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ferry-agent RUNTIME DESTINATION ${ferry_libdir})
if(FERRY_WITH_TORCH)
  install(TARGETS ferry-tiny-models RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(TARGETS ferry-eval RUNTIME DESTINATION ${ferry_libdir})
  install(TARGETS ferry_eval_plugin LIBRARY DESTINATION ${ferry_libdir})
  if(TARGET dflash-train-drafter)
    install(TARGETS dflash-tiny-data dflash-train-target dflash-train-drafter
            RUNTIME DESTINATION ${ferry_libdir})
  endif()
endif()

# Each doc where the source tree has it, so their relative links hold; a link to
# what is not shipped (tests/...) becomes plain text naming it (RewriteDocLinks.cmake).
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES cmake/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(FILES workflows/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/workflows)
install(FILES jobs/eval/README.md jobs/eval/measurements.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/jobs/eval)
install(FILES jobs/tokenizer/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/jobs/tokenizer)
# The workflows and their notes, not the demo's C++ sources (those are built above);
# `ferry examples DIR` copies these (orchestrator/cmd_examples.cc takes the same files).
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        FILES_MATCHING PATTERN "*.yaml" PATTERN "*.md" PATTERN "*.jsonl")
install(CODE "set(DOC_DIR \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DOCDIR}\")
              include(\"${CMAKE_SOURCE_DIR}/cmake/RewriteDocLinks.cmake\")")

# Completions, written by the ferry just built.
set(completion_dir ${CMAKE_BINARY_DIR}/completion)
add_custom_command(OUTPUT ${completion_dir}/ferry
                   COMMAND ${CMAKE_COMMAND} -E make_directory ${completion_dir}
                   COMMAND ferry completion bash > ${completion_dir}/ferry
                   DEPENDS ferry VERBATIM)
add_custom_target(ferry_completion ALL DEPENDS ${completion_dir}/ferry)
install(FILES ${completion_dir}/ferry DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ferry)
# The version ferry --version prints.
file(STRINGS ${CMAKE_SOURCE_DIR}/base/version.h version_line REGEX "kFerryVersion = ")
string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" CPACK_PACKAGE_VERSION "${version_line}")
set(CPACK_PACKAGE_CONTACT "ferry maintainers <ferry@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "run multi-host ML evaluation workflows")
# One string: two would be a CMake list, joined with ';' in the package's Description.
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "ferry runs a YAML workflow of stages on several hosts over SSH: a static agent on each\n"
       "host, checkpoint copies relayed between hosts, and an in-process drafter eval engine.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# Depends by hand, for Debian 12: dpkg-shlibdeps would name `libopenblas0` (OpenBLAS's
# shlibs file), a package a machine with only the OpenMP build lacks, and any
# libblas.so.3 provider, where the eval engine's RUNPATH wants this one
# (jobs/eval/CMakeLists.txt). tests/package checks each library resolves.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libgcc-s1, libssh-4, libsqlite3-0, libyaml-cpp0.7, libxxhash0, libicu72")
if(FERRY_WITH_TORCH)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libtorch1.13, libgomp1, libopenblas0-openmp")
endif()
# ssh for hosts with `transport: ssh`; not needed for local hosts.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openssh-client")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "chromium")
include(CPack)
