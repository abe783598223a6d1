// libwebp: still images (decode.h, encode.h), animation and metadata containers (demux.h, mux.h).
#include <webp/decode.h>
#include <webp/encode.h>
#include <webp/demux.h>
#include <webp/mux.h>
