#include "protocol/ops/recv.h"

#include "protocol/ops/message_fields.h"

namespace ferry::protocol {
namespace {

// Both directions of each request (base/json_field_writer.h, base/json_fields.h).
constexpr auto recv_begin_fields = [](auto& v, auto& x) {
  v("dest", x.dest, kRequired);
  v("size", x.size);
  v("chunk_size", x.chunk_size);
  v("mode", x.mode);
  v.nonempty("file_hash", x.file_hash);
  v.nonempty("owner", x.owner);
};

constexpr auto recv_write_fields = [](auto& v, auto& x) {
  v("dest", x.dest, kRequired);
  v("index", x.index);
  v("chunk_size", x.chunk_size);
  v("hash", x.hash);
  v.nonempty("owner", x.owner);
};

constexpr auto recv_commit_fields = [](auto& v, auto& x) {
  v("dest", x.dest, kRequired);
  v("chunk_size", x.chunk_size);
  v("chunks", x.chunks);
  v.nonempty("owner", x.owner);
};

constexpr auto recv_begin_reply_fields = [](auto& v, auto& x) {
  v("complete", x.complete, kRequired);
  v("have", x.have);
};

constexpr auto recv_commit_reply_fields = [](auto& v, auto& x) {
  v("committed", x.committed, kRequired);
  if (!x.committed) {  // read by then, on reading
    v("bad", x.bad);
    v.nonempty("error", x.error);
  }
};

constexpr auto recv_prepare_dir_fields = [](auto& v, auto& x) {
  v("path", x.path, kRequired);
  v("record", x.record);
};

constexpr auto recv_finish_dir_fields = [](auto& v, auto& x) {
  v("path", x.path, kRequired);
  v.nonempty("manifest_hash", x.manifest_hash);
  v("prune", x.prune);
};

}  // namespace

FERRY_REQUEST_JSON(RecvBeginArgs, recv_begin_fields)
FERRY_REQUEST_JSON(RecvWriteArgs, recv_write_fields)
FERRY_REQUEST_JSON(RecvCommitArgs, recv_commit_fields)
FERRY_REPLY_JSON(RecvBeginReply, "the recv.begin reply", recv_begin_reply_fields)
FERRY_REPLY_JSON(RecvCommitReply, "the recv.commit reply", recv_commit_reply_fields)
FERRY_REQUEST_JSON(RecvPrepareDirArgs, recv_prepare_dir_fields)
FERRY_REQUEST_JSON(RecvFinishDirArgs, recv_finish_dir_fields)

}  // namespace ferry::protocol
