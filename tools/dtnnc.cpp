// The compiler `dtnnc`: all of it lives in libdtnn (tools/lib); see dtnn/Tools.h.
#include "dtnn/Tools.h"

int main(int argc, char **argv) { return dtnn::dtnncMain(argc, argv); }
