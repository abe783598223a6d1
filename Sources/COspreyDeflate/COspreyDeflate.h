// libdeflate: whole-buffer zlib inflate, 2–3× faster than zlib's streaming inflate, used by the PNG fast path.
#include <libdeflate.h>
