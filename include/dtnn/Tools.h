// The command-line programs as library calls. `dtnnc`, `dtnn-run` and `dtnn-sim` are each a
// main() that calls one of these, so that everything the programs do is reachable through
// libdtnn: a test, or another program, runs them in-process with an argument vector.
#pragma once

namespace dtnn {

// The compiler driver `dtnnc` (compile, opt, ops, run-settings); returns the exit status.
int dtnncMain(int argc, char **argv);

// The trainer `dtnn-run` (train, evaluate, predict, calibrate); returns the exit status.
int dtnnRunMain(int argc, char **argv);

// The scaling simulator `dtnn-sim`; returns the exit status.
int dtnnSimMain(int argc, char **argv);

} // namespace dtnn
