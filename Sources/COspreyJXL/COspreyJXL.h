// libjxl (Debian's libjxl-dev 0.7): the decoder and encoder APIs.
#include <jxl/decode.h>
#include <jxl/encode.h>
