// libavif (Debian's libavif-dev 0.11: dav1d decodes, aom encodes).
#include <avif/avif.h>
