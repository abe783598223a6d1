// giflib 5: DGifOpen with a memory reader, DGifSlurp or record-by-record reading, and EGif for encoding.
#include <gif_lib.h>
