#include "transfer/host_listing.h"

#include <memory>
#include <utility>

#include "protocol/ops/fs.h"
#include "transfer/chunk_files.h"

namespace ferry {
namespace {

class PagedListing : public std::enable_shared_from_this<PagedListing> {
 public:
  PagedListing(ListCall call, std::string path, std::string what, ListDone done, int64_t page_files, int* pages)
      : call_(std::move(call)),
        path_(std::move(path)),
        what_(std::move(what)),
        done_(std::move(done)),
        page_files_(page_files),
        pages_(pages) {}

  void next() {
    protocol::FsListArgs args{path_, after_, std::nullopt};
    if (page_files_ > 0) args.limit = page_files_;
    auto self = shared_from_this();
    call_(args.to_json(), [self](Result<protocol::Frame> r) { self->take(std::move(r)); });
  }

 private:
  void take(Result<protocol::Frame> r) {
    // Every error names the listing, the call's own too (its code kept: a lost link stays kUnavailable).
    if (!r.ok()) return done_(Status(r.status().code(), "listing " + what_ + ": " + r.status().message()));
    if (pages_) ++*pages_;
    auto page = protocol::FsListReply::from_json(r->header);
    if (!page.ok()) return done_(data_loss("listing " + what_ + ": " + page.status().message()));
    if (pages_taken_++ == 0) {
      listing_.type = page->type;
    } else if (listing_.type != page->type) {
      return done_(data_loss("the listing of " + what_ + " changed type between pages"));
    }
    if (listing_.files.size() + page->files.size() > static_cast<size_t>(kMaxListedFiles)) {
      return done_(invalid_argument(what_ + " holds more than " + std::to_string(kMaxListedFiles) +
                                    " files: too many for one copy; copy its subfolders apart"));
    }
    for (auto& f : page->files) {
      // Strictly after the last one: pages never repeat or go back, so the loop ends.
      if (page->more || !after_.empty()) {
        if (!after_.empty() && !listing_order(after_, f.path)) {
          return done_(
              data_loss("the listing of " + what_ + " is out of order at '" + f.path + "' (after '" + after_ + "')"));
        }
        after_ = f.path;
      }
      listing_.files.push_back(std::move(f));
    }
    if (!page->more) return done_(std::move(listing_));
    if (page->files.empty()) return done_(data_loss("a page of the listing of " + what_ + " was empty but said more"));
    next();
  }

  ListCall call_;
  std::string path_, what_;
  ListDone done_;
  int64_t page_files_;
  int* pages_;
  std::string after_;  // the last path so far: the next page starts after it
  int pages_taken_ = 0;
  protocol::FsListReply listing_;  // every page's files so far
};

}  // namespace

void list_host_path(const ListCall& call, const std::string& path, const std::string& what, ListDone done,
                    int64_t page_files, int* pages) {
  std::make_shared<PagedListing>(call, path, what, std::move(done), page_files, pages)->next();
}

}  // namespace ferry
