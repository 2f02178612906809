// ferry: the coordinator and its CLI. Everything lives in the libraries.
#include "base/chunk_memory.h"
#include "orchestrator/cli.h"

int main(int argc, char** argv) {
  ferry::keep_chunk_buffers_warm();  // the relay moves 2 MiB chunks
  return ferry::cli::cli_main(argc, argv);
}
