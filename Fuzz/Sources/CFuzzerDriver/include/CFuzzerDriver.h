#ifndef OSPREY_FUZZER_DRIVER_H
#define OSPREY_FUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

// libFuzzer's entry point for programs that have their own main: SwiftPM links an executable's main to the symbol
// `<Module>_main`, so each harness defines that and hands control to libFuzzer here.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
