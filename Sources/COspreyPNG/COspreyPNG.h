// libpng 1.6: chosen over libspng for its push (progressive) reader, which incremental decoding needs.
#include <png.h>
