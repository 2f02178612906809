// ferry: the coordinator and its CLI. Everything lives in the libraries.
#include "orchestrator/cli.h"

int main(int argc, char** argv) { return ferry::cli::cli_main(argc, argv); }
