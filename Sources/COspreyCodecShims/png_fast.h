#ifndef OSPREY_PNG_FAST_H
#define OSPREY_PNG_FAST_H

// The PNG fast path (private to this target).

#include "COspreyCodecShims.h"

/// Decodes the common case — 8 bits per sample, not interlaced, every chunk intact and in order — with libdeflate's
/// whole-buffer inflate and our own unfiltering, into the layout osprey_png_decode promises.
///
/// Returns 1 with `result` filled, or 0 when the file is anything else: then nothing is allocated and the caller
/// decodes with libpng, which gives the same pixels, and for a damaged file its own verdict and message. The fast
/// path accepts only files libpng decodes without complaint; whatever libpng would reject, warn about, repair or
/// read differently (a bad CRC, a chunk out of place, a stream that is short, long or carries a preset dictionary,
/// an unknown critical chunk, an oversized chunk) is sent back to it.
int osprey_png_decode_fast(const uint8_t *data, size_t size, const osprey_png_decode_request *request,
                           osprey_png_decode_result *result);

#endif
