#ifndef OSPREY_CODEC_SHIMS_H
#define OSPREY_CODEC_SHIMS_H

// The C Osprey writes: wrappers of the codec libraries, and pixel loops that must be fast in a debug build too
// (colour conversion, SSIMULACRA 2's). libjpeg and libpng report errors by calling a handler that must not return:
// they expect the caller to longjmp out of it. Swift cannot call setjmp, so every entry point that can fail is
// wrapped here, each with its own jmp_buf on the C stack, and returns a status plus the library's own message.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Room for a library error message, NUL-terminated. libjpeg's JMSG_LENGTH_MAX is 200.
#define OSPREY_MESSAGE_CAPACITY 256

/// What a JPEG header says, before any pixel is decoded.
typedef struct {
    uint32_t width;
    uint32_t height;
    /// Components in the file: 1 grayscale, 3 YCbCr/RGB, 4 CMYK/YCCK.
    int32_t components;
    /// libjpeg's J_COLOR_SPACE of the file.
    int32_t colorSpace;
    /// 1 when the file is progressive (SOF2/SOF6/SOF10/SOF14).
    int32_t progressive;
    /// 1 when the file uses arithmetic coding.
    int32_t arithmetic;
    /// Bits per sample: 8, or 12 (12-bit JPEG).
    int32_t precision;
    /// The bytes of the whole-image coefficient arrays a progressive decode keeps (every component's blocks, at full
    /// size whatever the output scale); 0 for a sequential file.
    uint64_t coefficientBytes;
} osprey_jpeg_header;

/// Reads a JPEG header from memory. Returns 0 on success; otherwise -1 with `message` set to libjpeg's message.
int osprey_jpeg_read_header(const uint8_t *data, size_t size, osprey_jpeg_header *header, char *message);

/// What a PNG IHDR says, read through libpng (which checks the signature and the chunk CRC).
typedef struct {
    uint32_t width;
    uint32_t height;
    int32_t bitDepth;
    /// libpng's PNG_COLOR_TYPE_* value.
    int32_t colorType;
    /// 1 when the image is Adam7-interlaced.
    int32_t interlaced;
} osprey_png_header;

/// Reads a PNG header from memory. Returns 0 on success; otherwise -1 with `message` set to libpng's message.
int osprey_png_read_header(const uint8_t *data, size_t size, osprey_png_header *header, char *message);

/// Converts `count` rows of `width` pixels of `components` bytes in place (colour management); `context` is the
/// converter's own state, which it must not change (several threads may use it at once).
typedef struct {
    void (*convert)(void *context, uint8_t *rows, size_t bytesPerRow, uint32_t width, uint32_t count,
                    uint32_t components);
    void *context;
} osprey_row_converter;

/// A conversion of 8-bit RGB between two matrix/shaper spaces, as tables: each input value's contribution to each
/// output channel in linear light, and the output tone curve over linear values.
typedef struct osprey_rgb_matrix_transform osprey_rgb_matrix_transform;

/// Makes the tables: `columns` holds 3 × 256 × 4 values (for each input channel and value, its contribution to the
/// output's R, G and B in linear light, `scale` being 1.0, and a fourth ignored), `encode` scale + 1 output values
/// for the linear values 0…scale. `scale` is at most 16383, and no output's three contributions may add up to more
/// than 32767 in magnitude. NULL when memory is short or `scale` is out of range.
osprey_rgb_matrix_transform *osprey_rgb_matrix_transform_create(const int16_t *columns, const uint8_t *encode,
                                                                uint32_t scale);
void osprey_rgb_matrix_transform_free(osprey_rgb_matrix_transform *transform);

/// An osprey_row_converter function: RGB (3 components) or RGBA (4, alpha untouched) through an
/// osprey_rgb_matrix_transform given as the context.
void osprey_rgb_matrix_convert(void *context, uint8_t *rows, size_t bytesPerRow, uint32_t width, uint32_t count,
                               uint32_t components);

/// An osprey_row_converter function: the first component of every pixel through a 256-byte table (the context); for
/// gray and gray+alpha.
void osprey_table_convert(void *context, uint8_t *rows, size_t bytesPerRow, uint32_t width, uint32_t count,
                          uint32_t components);

/// Converts rows as a decoder produces them: on a helper thread that follows the decoder for images of a mebipixel
/// or more on a machine with more than one processor (the decoder and the helper share what is left at the end),
/// else on the decoding thread as soon as the rows are ready, while they are in the cache.
typedef struct osprey_row_pipeline osprey_row_pipeline;

/// NULL when `converter` has no function or memory is short.
osprey_row_pipeline *osprey_row_pipeline_start(osprey_row_converter converter, uint8_t *pixels, size_t bytesPerRow,
                                               uint32_t width, uint32_t height, uint32_t components);
/// Rows [0, rows) are decoded.
void osprey_row_pipeline_ready(osprey_row_pipeline *pipeline, uint32_t rows);
/// Rows [0, rows) are decoded and no more will come: returns when all of them are converted, and frees the pipeline.
void osprey_row_pipeline_finish(osprey_row_pipeline *pipeline, uint32_t rows);

/// Converts a whole image in place, with the pipeline's helper thread when it is large.
void osprey_rows_convert(osprey_row_converter converter, uint8_t *pixels, size_t bytesPerRow, uint32_t width,
                         uint32_t height, uint32_t components);

/// What a full JPEG decode is asked for. Scaling uses libjpeg-turbo's DCT scaling (M/8 for M in 1…8).
typedef struct {
    /// Scale down no further than this output width/height (0: no minimum).
    uint32_t minWidth;
    uint32_t minHeight;
    /// Scale down until the output has at most this many pixels (0: no budget).
    uint64_t pixelBudget;
    /// Refuse to produce more output pixels than this (checked before any pixel buffer is allocated).
    uint64_t maxPixels;
    /// Bound on libjpeg's own working memory (progressive files buffer every coefficient), in bytes.
    uint64_t maxMemory;
    /// Refuse progressive files with more scans than this (a scan bomb costs time, not memory).
    uint32_t maxScans;
    /// Return what was decoded of a truncated file instead of failing.
    int32_t allowPartial;
    /// For a CMYK or YCCK file, return its CMYK values as stored (4 components; `cmykInverted` says whether they are
    /// Adobe's inverted ones) instead of converting them to RGB without a profile.
    int32_t keepCMYK;
    /// Applied to the decoded rows as they come, when it has a function and the output has `converterComponents`
    /// components (a converter for RGB is not applied to a grayscale file).
    osprey_row_converter converter;
    uint32_t converterComponents;
    /// When set, a flag the decode reads at each of libjpeg's progress checkpoints (every row group of every scan it
    /// reads, every batch of output rows): once it is non-zero (osprey_cancel_set), the decode stops with
    /// OSPREY_CANCELLED.
    const int32_t *cancelled;
    /// Read a sequential file's scan with libjpeg's own Huffman decoder instead of Osprey's (the same coefficients, for
    /// more work): for comparing the two, in tests and benchmarks.
    int32_t libjpegHuffman;
} osprey_jpeg_decode_request;

/// The outcome of a JPEG decode. `pixels` comes from osprey_pixels_allocate(`bytesPerRow` × `height`): the caller
/// releases it with osprey_pixels_free and that size. On OSPREY_LIMIT_EXCEEDED, `width` and `height` give the output
/// size that was refused.
typedef struct {
    uint8_t *pixels;
    uint32_t width;
    uint32_t height;
    /// 1 (grayscale), 3 (RGB; CMYK and YCCK are converted), or 4 (CMYK as stored, with `keepCMYK`).
    uint32_t components;
    /// With 4 components: 1 when the values are Adobe's inverted CMYK (0 is full ink), 0 when they are plain.
    int32_t cmykInverted;
    uint64_t bytesPerRow;
    uint32_t sourceWidth;
    uint32_t sourceHeight;
    /// The scale applied: scaleNumerator / 8.
    uint32_t scaleNumerator;
    /// 1 when the data ended before the last scanline (only returned with allowPartial).
    int32_t truncated;
    /// How a decode at 1/8 read the components it scales by a 1×1 IDCT (the same pixels for less entropy decoding):
    /// 1, libjpeg decoded a copy of the file that keeps only their DC coefficients; 2, every component is one and the
    /// DC coefficients of a sequential file were read straight into the image; 0, neither.
    int32_t readDCOnly;
    /// Which Huffman decoder read the scan: 1, Osprey's, for libjpeg (a sequential file whose scan read cleanly to
    /// its end); 2, libjpeg's, after Osprey's gave the scan up part way (its data is not as a clean file's) and the
    /// file was decoded again from the start; 0, libjpeg's alone (any other file).
    int32_t ownHuffman;
} osprey_jpeg_decode_result;

/// Status codes of the decode shims.
#define OSPREY_OK 0
#define OSPREY_ERROR -1
#define OSPREY_LIMIT_EXCEEDED -2
#define OSPREY_TRUNCATED -3
#define OSPREY_CANCELLED -4

/// Sets a decode's cancellation flag (an atomic store: another thread may be decoding).
void osprey_cancel_set(int32_t *flag);
/// Whether a cancellation flag is set (an atomic load).
int32_t osprey_cancel_get(const int32_t *flag);

/// CMYK (or Adobe's inverted CMYK) to RGB without a profile: what the decoder does unless asked to keep CMYK.
void osprey_jpeg_cmyk_to_rgb(const uint8_t *cmyk, uint8_t *rgb, uint32_t width, int inverted);

/// The DCT scale M (output = M/8 of the size, 1…8) a decode of a `width` × `height` image with `request` uses: the
/// largest within its pixel budget, then the smallest that still gives its minimum size.
uint32_t osprey_jpeg_scale_numerator(uint32_t width, uint32_t height, const osprey_jpeg_decode_request *request);

/// Decodes a JPEG from memory. On OSPREY_OK `result` owns its buffers; otherwise nothing is left allocated and
/// `message` says why.
int osprey_jpeg_decode(const uint8_t *data, size_t size, const osprey_jpeg_decode_request *request,
                       osprey_jpeg_decode_result *result, char *message);

/// What a full PNG decode is asked for.
typedef struct {
    uint64_t maxPixels;
    /// Return what was decoded of a truncated file instead of failing.
    int32_t allowPartial;
    /// 1: decode with libpng alone, never the libdeflate fast path (tests compare the two).
    int32_t libpngOnly;
    /// When set, a flag libpng's path reads before each row (the fast path inflates in one call and does not): once
    /// it is non-zero (osprey_cancel_set), the decode stops with OSPREY_CANCELLED.
    const int32_t *cancelled;
} osprey_png_decode_request;

/// The outcome of a PNG decode: 8 bits per channel, gray (1), gray+alpha (2), RGB (3) or RGBA (4). `pixels` comes
/// from osprey_pixels_allocate(`bytesPerRow` × `height`) and is released with osprey_pixels_free and that size;
/// `exif` is malloc'd and released with free.
typedef struct {
    uint8_t *pixels;
    uint32_t width;
    uint32_t height;
    uint32_t components;
    uint64_t bytesPerRow;
    /// The eXIf chunk's TIFF payload, or NULL.
    uint8_t *exif;
    uint64_t exifLength;
    /// 1 when image data ended early (only returned with allowPartial).
    int32_t truncated;
    /// 1 when the libdeflate fast path decoded the file, 0 when libpng did.
    int32_t fastPath;
} osprey_png_decode_result;

/// Decodes a PNG (the default image of an APNG) from memory; same ownership rules as osprey_jpeg_decode.
int osprey_png_decode(const uint8_t *data, size_t size, const osprey_png_decode_request *request,
                      osprey_png_decode_result *result, char *message);

/// Encodes 8-bit pixels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA components) as PNG at zlib `compressionLevel` 0…9;
/// RGB or RGBA of at most 256 colours as the same colours in a palette (at zlib level 9, as pngquant writes one).
/// On OSPREY_OK, `*output` is a malloc'd buffer of `*outputSize` bytes the caller frees.
int osprey_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t components, uint64_t bytesPerRow,
                      int32_t compressionLevel, uint8_t **output, uint64_t *outputSize, char *message);

/// Encodes 8-bit RGB or RGBA pixels (3 or 4 components) as a palette PNG of at most 256 colours quantised by
/// libimagequant aiming at `quality` 0…100 (pngquant's --quality 0-`quality`: the fewest colours that reach it, so a
/// picture of few colours may lose some) at `speed` 1 (slowest, best) to 10, Floyd–Steinberg dithered, alpha kept in
/// the palette; 1, 2 or 4 bits per pixel when the palette is that small. Same ownership of `*output` as
/// osprey_png_encode.
int osprey_png_encode_palette(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t components,
                              uint64_t bytesPerRow, int32_t quality, int32_t speed, uint8_t **output,
                              uint64_t *outputSize, char *message);

/// Decodes one GIF frame's LZW stream (its data sub-blocks concatenated) into colour indices, at most `outputSize` of
/// them, in the order the file stores the rows. Returns the number of indices written, or -1 for an invalid code or
/// minimum code size. `*sawEnd` is set to 1 when the end-of-information code was read. Data after the last pixel is
/// ignored, as browsers do.
int64_t osprey_gif_lzw_decode(const uint8_t *data, size_t size, int32_t minimumCodeSize, uint8_t *output,
                              size_t outputSize, int32_t *sawEnd);

/// Allocates `size` zeroed bytes for pixels. Buffers of 4 MiB and more are mappings of their own, in size classes
/// (at most 12.5% larger), taken from the recycling pool when a freed one fits (see osprey_pixel_pool_take): a
/// large decode then writes into resident pages instead of faulting in tens of thousands of fresh ones.
/// Release with osprey_pixels_free and the same size.
void *osprey_pixels_allocate(size_t size);

/// osprey_pixels_allocate without the zeroing: for a buffer whose every byte is written before it is read.
void *osprey_pixels_allocate_uninitialized(size_t size);

/// Releases a buffer from osprey_pixels_allocate; `size` must be the size it was allocated with. A large buffer goes
/// to the recycling pool (at most 4 buffers and 256 MiB; the oldest are unmapped to make room).
void osprey_pixels_free(void *pixels, size_t size);

/// A recycling pool of anonymous mappings, safe to use from any thread. The allocator above has its own; tests make
/// others to check the policy without other threads' buffers coming and going.
typedef struct osprey_pixel_pool osprey_pixel_pool;

/// How a pool gives a mapping (or the end of one) back: munmap, unless a test watches.
typedef void (*osprey_unmap_function)(void *context, void *pixels, size_t length);

/// A new, empty pool holding at most 4 mappings and `byteLimit` bytes, giving mappings back with `unmap(context, ...)`
/// (munmap when NULL); NULL when out of memory.
osprey_pixel_pool *osprey_pixel_pool_create(size_t byteLimit, osprey_unmap_function unmap, void *context);

/// Unmaps what `pool` holds and frees it.
void osprey_pixel_pool_destroy(osprey_pixel_pool *pool);

/// Takes the smallest mapping in `pool` at least `length` bytes long and at most twice that, unmapping its pages
/// beyond `length` (a whole number of pages); NULL when none fits. A larger mapping serves a smaller buffer rather
/// than sitting unused while fresh pages are faulted in, but never one under half its size, which a later buffer
/// of its own size could use whole.
void *osprey_pixel_pool_take(osprey_pixel_pool *pool, size_t length);

/// Gives `pool` a mapping of `length` bytes (a whole number of pages) from mmap, unmapping the oldest ones to stay
/// within its bounds; a mapping longer than the byte limit is unmapped at once.
void osprey_pixel_pool_give(osprey_pixel_pool *pool, void *pixels, size_t length);

/// Unmaps every mapping `pool` holds.
void osprey_pixel_pool_drain(osprey_pixel_pool *pool);

/// The bytes `pool` holds.
size_t osprey_pixel_pool_bytes(osprey_pixel_pool *pool);

/// Unmaps every buffer in the recycling pool.
void osprey_pixels_release_recycled(void);

/// The bytes the recycling pool holds.
size_t osprey_pixels_recycled_bytes(void);

/// Gives back the end of a buffer from osprey_pixels_allocate(`size`), keeping its first `newSize` bytes. The result
/// (the same pointer, or a copy when the buffer changes kind) is released with osprey_pixels_free(`newSize`); NULL
/// when the copy cannot be allocated, leaving `pixels` as it was.
void *osprey_pixels_shrink(void *pixels, size_t size, size_t newSize);

/// The libjpeg-turbo version as the number the library was built with, e.g. 2001005 for 2.1.5.
int osprey_jpeg_turbo_version_number(void);

// MARK: SSIMULACRA 2 (quality.c)

/// Linear sRGB planes of 8-bit RGB(A) pixels: `decoded` maps a byte to its linear value; a pixel whose alpha (byte 3,
/// when `has_alpha`) is not 255 is blended over `background` (an encoded value, 0–1) first.
void osprey_quality_linear_planes(const uint8_t *pixels, size_t bytes_per_row, uint32_t width, uint32_t height,
                                  uint32_t bytes_per_pixel, int has_alpha, float background, const float *decoded,
                                  float *red, float *green, float *blue);
/// One plane at half the size (rounded up), each value the mean of a 2 × 2 block, the last row and column repeated.
void osprey_quality_halve(const float *input, uint32_t width, uint32_t height, float *output);
/// The cube root of `value` (0 for a value that is not positive), to single precision.
float osprey_quality_cube_root(float value);
/// Linear sRGB to XYB rescaled as SSIMULACRA 2 rescales it, `count` values of each plane.
void osprey_quality_xyb(const float *red, const float *green, const float *blue, size_t count, float *x, float *y,
                        float *b);
/// `output[x] = Σ kernel[k] · rows[k][x]` over eleven rows and a symmetric kernel.
void osprey_quality_weighted_sum(const float *const *rows, const float *kernel, uint32_t width, float *output);
/// `output[x] = a[x] · b[x]`.
void osprey_quality_multiply(const float *a, const float *b, uint32_t width, float *output);
/// Adds one row's SSIMULACRA 2 error sums to `sums`: the SSIM error and its fourth power, the ringing and its fourth
/// power, the blurring and its fourth power.
void osprey_quality_error_sums(const float *reference, const float *distorted, const float *mean1,
                               const float *mean2, const float *sigma11, const float *sigma22, const float *sigma12,
                               uint32_t width, double *sums);

// MARK: Resampling (resample.c)

/// One row filtered horizontally, four floats a pixel: output pixel `x` (of `width`) is the sum of `counts[x]` pixels
/// of `pixels` from `starts[x] - offset`, weighted by `weights[x * taps ...]`.
void osprey_resample_filter_row(const float *pixels, const intptr_t *starts, const intptr_t *counts, intptr_t offset,
                                const float *weights, uint32_t taps, uint32_t width, float *row);
/// One output row, four floats a pixel: the sum of `count` rows of the ring `ring` (`slots` rows of `width` pixels,
/// source row r in slot r % slots) from source row `first`, weighted by `weights`.
void osprey_resample_sum_rows(const float *ring, uint32_t slots, uint32_t width, uint32_t first,
                              const float *weights, uint32_t count, float *sum);
/// `count` pixels of `channels` bytes (gray, gray + alpha, RGB, RGBA) as four floats each: colour in lanes 0-2 (gray
/// in lane 0), alpha in lane 3 (255 without), colour multiplied by alpha / 255 when `premultiply`.
void osprey_resample_widen(const uint8_t *source, uint32_t count, uint32_t channels, int premultiply, float *pixels);
/// With 4, the loops above run four lanes wide even where wider ones are there (for tests: both widths must give the
/// same bytes); with any other value, as wide as the processor allows.
void osprey_resample_limit_lanes(uint32_t lanes);
/// `count` pixels of four floats back to `channels` bytes each: divided by alpha / 255 when `premultiplied`,
/// rounded half up, clamped to 0-255.
void osprey_resample_narrow(const float *pixels, uint32_t count, uint32_t channels, int premultiplied,
                            uint8_t *target);

#ifdef __cplusplus
}
#endif

#endif
