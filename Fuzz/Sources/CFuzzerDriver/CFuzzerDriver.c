// Declarations only: LLVMFuzzerRunDriver is defined by libFuzzer (linked through -sanitize=fuzzer).
#include "CFuzzerDriver.h"
