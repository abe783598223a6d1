// libjxl (Debian's libjxl-dev 0.7): the decoder API.
#include <jxl/decode.h>
