#include "COspreyCodecShims.h"

#include "jpeg_baseline_dc.h"
#include "jpeg_coefficients.h"
#include "jpeg_error.h"
#include "jpeg_huffman.h"

#include <stdlib.h>
#include <string.h>

// How many scanlines one jpeg_read_scanlines call asks for.
#define OSPREY_JPEG_ROWS_PER_READ 16

// Stops a progressive file whose scan count passes the limit: every scan re-decodes the whole coefficient buffer,
// so a small file with thousands of scans costs minutes of CPU (libjpeg-turbo's own fuzzers cap scans the same way).
// Stops a cancelled decode too: libjpeg calls the monitor for every row group of every scan it reads and every batch
// of rows it outputs, so a cancelled decode ends within one row group's work.
typedef struct {
    struct jpeg_progress_mgr base;
    uint32_t maxScans;
    const int32_t *cancelled;
} osprey_jpeg_progress;

static void osprey_jpeg_progress_monitor(j_common_ptr common) {
    j_decompress_ptr info = (j_decompress_ptr)common;
    osprey_jpeg_progress *progress = (osprey_jpeg_progress *)common->progress;
    osprey_jpeg_error *error = (osprey_jpeg_error *)common->err;
    if (progress->cancelled != NULL && osprey_cancel_get(progress->cancelled)) {
        snprintf(error->message, OSPREY_MESSAGE_CAPACITY, "cancelled");
        longjmp(error->jump, 4);
    }
    if (info->is_decompressor && progress->maxScans > 0 && (uint32_t)info->input_scan_number > progress->maxScans) {
        snprintf(error->message, OSPREY_MESSAGE_CAPACITY, "more than %u progressive scans", progress->maxScans);
        longjmp(error->jump, 2);
    }
}

// The output size libjpeg gives for scale m/8: ceil(size * m / 8).
static uint64_t osprey_scaled(uint32_t size, uint32_t m) {
    return ((uint64_t)size * m + 7) / 8;
}

// The DCT scale m/8 (1…8) to decode at: the largest within the pixel budget, then the smallest of those that still
// gives at least minWidth × minHeight. With neither asked for, 8/8. (Exported: the memory estimate of a decode uses
// the same choice.)
uint32_t osprey_jpeg_scale_numerator(uint32_t width, uint32_t height, const osprey_jpeg_decode_request *request) {
    uint32_t m = 8;
    if (request->pixelBudget > 0) {
        while (m > 1 && osprey_scaled(width, m) * osprey_scaled(height, m) > request->pixelBudget) {
            m--;
        }
    }
    if (request->minWidth > 0 || request->minHeight > 0) {
        while (m > 1 && osprey_scaled(width, m - 1) >= request->minWidth
               && osprey_scaled(height, m - 1) >= request->minHeight) {
            m--;
        }
    }
    return m;
}

// A copy of a progressive JPEG without the AC scans of the components in `dcOnly` (indexed by component id), for a
// decode at scale 1/8: a component whose blocks each become one pixel is computed from its DC coefficients alone
// (jpeg_idct_1x1), so its AC scans — most of the file and of the entropy decoding — change nothing. (Subsampled
// chroma is scaled up through a larger IDCT instead of upsampled, which reads AC coefficients: its scans stay.)
// AC scans of a progressive file have one component each. Every other segment is kept in order. Returns the
// copy's length and sets *copy (free() it), or 0 with *copy NULL when the walk does not reach EOI cleanly (a
// truncated or odd file is decoded as it is). Only a file whose scans bring every coefficient of every component to
// full precision is copied: for one that stops early, libjpeg estimates what is missing from neighbouring blocks
// (DC included), and it must see the same scans to estimate the same.
static size_t osprey_jpeg_without_ac_scans(const uint8_t *data, size_t size, const uint8_t dcOnly[256],
                                           const int *componentIds, int componentCount, uint8_t **copy) {
    *copy = NULL;
    if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) {
        return 0;
    }
    uint8_t *out = malloc(size);
    if (out == NULL) {
        return 0;
    }
    // The lowest successive-approximation bit each coefficient of each component (by id) has reached; 0xFF: none.
    static const size_t coefficients = 64;
    uint8_t *reached = malloc(256 * coefficients);
    if (reached == NULL) {
        free(out);
        return 0;
    }
    memset(reached, 0xFF, 256 * coefficients);
    size_t pos = 2, length = 2;
    out[0] = 0xFF;
    out[1] = 0xD8;
    while (pos + 1 < size) {
        if (data[pos] != 0xFF) {
            break;
        }
        uint8_t marker = data[pos + 1];
        if (marker == 0xFF) {  // fill byte
            pos++;
            continue;
        }
        if (marker == 0xD9) {  // EOI: done, if every coefficient is complete
            int complete = 1;
            for (int c = 0; c < componentCount && complete; c++) {
                for (size_t k = 0; k < coefficients; k++) {
                    complete &= reached[(size_t)(componentIds[c] & 0xFF) * coefficients + k] == 0;
                }
            }
            free(reached);
            if (!complete) {
                free(out);
                return 0;
            }
            out[length++] = 0xFF;
            out[length++] = 0xD9;
            *copy = out;
            return length;
        }
        if (pos + 4 > size) {
            break;
        }
        size_t end = pos + 2 + ((size_t)data[pos + 2] << 8 | data[pos + 3]);
        if (end > size || end < pos + 4) {
            break;
        }
        int keep = 1;
        if (marker == 0xDA) {  // SOS: header (Ls, Ns, Ns component specs, Ss, Se, Ah/Al), then entropy-coded data
            size_t components = pos + 4 < size ? data[pos + 4] : 0;
            size_t spectralStart = pos + 5 + 2 * components;
            if (spectralStart >= end) {
                break;
            }
            if (spectralStart + 2 >= end) {
                break;
            }
            uint8_t ss = data[spectralStart], se = data[spectralStart + 1], al = data[spectralStart + 2] & 0x0F;
            for (size_t c = 0; c < components; c++) {
                uint8_t *row = reached + (size_t)data[pos + 5 + 2 * c] * coefficients;
                for (size_t k = ss; k <= se && k < coefficients; k++) {
                    row[k] = al < row[k] ? al : row[k];
                }
            }
            keep = ss == 0 || components != 1 || !dcOnly[data[pos + 5]];
            // The data runs to the next marker that is neither a stuffed 0xFF00 nor a restart marker.
            while (end < size) {
                const uint8_t *ff = memchr(data + end, 0xFF, size - end);
                if (ff == NULL) {
                    end = size;
                    break;
                }
                end = (size_t)(ff - data);
                if (end + 1 >= size) {
                    end = size;
                    break;
                }
                uint8_t next = data[end + 1];
                if (next != 0x00 && (next < 0xD0 || next > 0xD7)) {
                    break;
                }
                end += 2;
            }
            if (end >= size) {
                break;  // no marker after the scan: truncated
            }
        }
        if (keep) {
            memcpy(out + length, data + pos, end - pos);
            length += end - pos;
        }
        pos = end;
    }
    free(reached);
    free(out);
    return 0;
}

// Adobe CMYK (and YCCK, which libjpeg converts to CMYK) to RGB. Photoshop writes inverted CMYK (0 = full ink) and
// marks it with an Adobe APP14 segment; without one, the values are taken as regular (0 = no ink).
void osprey_jpeg_cmyk_to_rgb(const uint8_t *cmyk, uint8_t *rgb, uint32_t width, int inverted) {
    for (uint32_t x = 0; x < width; x++) {
        uint32_t c = cmyk[4 * x], m = cmyk[4 * x + 1], y = cmyk[4 * x + 2], k = cmyk[4 * x + 3];
        if (!inverted) {
            c = 255 - c;
            m = 255 - m;
            y = 255 - y;
            k = 255 - k;
        }
        rgb[3 * x] = (uint8_t)((c * k + 127) / 255);
        rgb[3 * x + 1] = (uint8_t)((m * k + 127) / 255);
        rgb[3 * x + 2] = (uint8_t)((y * k + 127) / 255);
    }
}

// What osprey_jpeg_decode_once returns when Osprey's Huffman decoder gave the scan up: decode again with libjpeg's.
#define OSPREY_JPEG_DECODE_AGAIN 1

// A decode with Osprey's Huffman decoder reading a sequential scan when `ownHuffman` is set.
static int osprey_jpeg_decode_once(const uint8_t *data, size_t size, const osprey_jpeg_decode_request *request,
                                   osprey_jpeg_decode_result *result, char *message, int ownHuffman) {
    struct jpeg_decompress_struct info;
    osprey_jpeg_error error;
    osprey_jpeg_progress progress;
    osprey_jpeg_coefficients coefficients;
    // Written after setjmp and read after a longjmp: volatile, so the values are not kept in registers.
    uint8_t *volatile pixels = NULL;
    uint8_t *volatile cmykRow = NULL;
    uint8_t *volatile dcOnly = NULL;
    size_t dcOnlySize = 0;
    osprey_jpeg_dc_image *volatile dcImage = NULL;
    osprey_jpeg_huffman *volatile huffman = NULL;
    volatile uint32_t rowsRead = 0;
    volatile int status = OSPREY_ERROR;
    osprey_row_pipeline *volatile pipeline = NULL;

    memset(result, 0, sizeof(*result));
    OSPREY_OPEN(jpeg, message);
    osprey_jpeg_error_install(&error, &info, message);
    int jumped = setjmp(error.jump);
    if (jumped) {
        // The helper converting rows stops before the pixels can go; the rows read are converted for a partial image.
        osprey_row_pipeline_finish(pipeline, rowsRead);
        int partial = pixels != NULL && rowsRead > 0 && request->allowPartial && jumped == 1;
        if (partial) {
            // A decode error after some rows: with allowPartial, keep what was decoded.
            result->pixels = pixels;
            result->truncated = 1;
        } else {
            osprey_pixels_free(pixels, (size_t)result->bytesPerRow * result->height);
        }
        free(cmykRow);
        jpeg_destroy_decompress(&info);
        free(dcOnly);
        osprey_jpeg_dc_image_release(dcImage);
        osprey_jpeg_huffman_release(huffman);
        return partial                                  ? OSPREY_OK
               : jumped == OSPREY_JPEG_HUFFMAN_GAVE_UP ? OSPREY_JPEG_DECODE_AGAIN
               : jumped == 2                           ? OSPREY_LIMIT_EXCEEDED
               : jumped == 4                           ? OSPREY_CANCELLED
                                                       : status;
    }
    if (size == 0) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "empty input");
        return OSPREY_ERROR;
    }
    jpeg_create_decompress(&info);
    info.mem->max_memory_to_use = (long)request->maxMemory;
    osprey_jpeg_coefficients_install(&coefficients, &info);
    progress.base.progress_monitor = osprey_jpeg_progress_monitor;
    progress.maxScans = request->maxScans;
    progress.cancelled = request->cancelled;
    info.progress = &progress.base;
    jpeg_mem_src(&info, data, (unsigned long)size);
    jpeg_read_header(&info, TRUE);
    result->sourceWidth = info.image_width;
    result->sourceHeight = info.image_height;

    int cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
    if (info.jpeg_color_space == JCS_GRAYSCALE) {
        info.out_color_space = JCS_GRAYSCALE;
    } else if (cmyk) {
        info.out_color_space = JCS_CMYK;
    } else {
        info.out_color_space = JCS_RGB;
    }
    uint32_t m = osprey_jpeg_scale_numerator(info.image_width, info.image_height, request);
    uint64_t eighthPixels = osprey_scaled(info.image_width, 1) * osprey_scaled(info.image_height, 1);
    if (m == 1 && !request->allowPartial && (request->maxPixels == 0 || eighthPixels <= request->maxPixels)) {
        // At 1/8 a component scaled by a 1×1 IDCT needs only its DC coefficients. When every component is, a
        // sequential file's DC samples are read straight into the image (libjpeg's IDCT, upsampling and colour
        // conversion at this scale, done the same way). Otherwise libjpeg decodes a copy without the coefficients it
        // would not use (the same pixels, a fraction of the work): a progressive file's without its AC scans, a
        // sequential one's with each such block cut to its DC difference. A partial decode keeps the file as it is,
        // so that truncation is still reported; an output over the pixel limit is refused below, before any of it.
        info.scale_num = 1;
        info.scale_denom = 8;
        jpeg_calc_output_dimensions(&info);
        uint8_t dcOnlyComponents[256] = {0};
        int componentIds[MAX_COMPONENTS];
        int componentCount = info.num_components < MAX_COMPONENTS ? info.num_components : MAX_COMPONENTS;
        int anyDCOnly = 0, allDCOnly = componentCount > 0;
        for (int i = 0; i < componentCount; i++) {
            componentIds[i] = info.comp_info[i].component_id;
            dcOnlyComponents[info.comp_info[i].component_id & 0xFF] = info.comp_info[i].DCT_scaled_size == 1;
            anyDCOnly |= info.comp_info[i].DCT_scaled_size == 1;
            allDCOnly &= info.comp_info[i].DCT_scaled_size == 1;
        }
        int direct = allDCOnly && !info.progressive_mode && !info.arith_code
                     && ((info.jpeg_color_space == JCS_YCbCr && info.num_components == 3)
                         || (info.jpeg_color_space == JCS_GRAYSCALE && info.num_components == 1));
        if (direct) {
            dcImage = osprey_jpeg_baseline_dc_image(data, size, request->cancelled);
            result->readDCOnly = dcImage != NULL ? 2 : 0;
        }
        uint8_t *copy = NULL;
        if (dcImage == NULL && anyDCOnly && info.progressive_mode) {
            dcOnlySize =
                osprey_jpeg_without_ac_scans(data, size, dcOnlyComponents, componentIds, componentCount, &copy);
        } else if (dcImage == NULL && anyDCOnly && !info.arith_code) {
            dcOnlySize = osprey_jpeg_baseline_without_ac(data, size, dcOnlyComponents, request->cancelled, &copy);
        }
        if (dcOnlySize > 0) {
            dcOnly = copy;
            result->readDCOnly = 1;
            J_COLOR_SPACE outColorSpace = info.out_color_space;
            jpeg_abort_decompress(&info);
            jpeg_mem_src(&info, dcOnly, (unsigned long)dcOnlySize);
            jpeg_read_header(&info, TRUE);
            info.out_color_space = outColorSpace;
            // The whole file is complete, so libjpeg would not smooth it; without the AC scans it would (estimating
            // coefficients it takes for missing, DC included): keep it from doing so.
            info.do_block_smoothing = FALSE;
        }
    }
    info.scale_num = m;
    info.scale_denom = 8;
    result->scaleNumerator = m;
    info.dct_method = JDCT_ISLOW;
    jpeg_calc_output_dimensions(&info);

    result->width = info.output_width;
    result->height = info.output_height;
    uint64_t outputPixels = (uint64_t)info.output_width * info.output_height;
    if (request->maxPixels > 0 && outputPixels > request->maxPixels) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "%ux%u output exceeds the limit of %llu pixels",
                 info.output_width, info.output_height, (unsigned long long)request->maxPixels);
        status = OSPREY_LIMIT_EXCEEDED;
        longjmp(error.jump, 3);
    }
    // Kept CMYK is written as stored, 4 bytes a pixel, for a colour transform to convert.
    int keepCMYK = cmyk && request->keepCMYK;
    uint32_t components = info.out_color_space == JCS_GRAYSCALE ? 1 : keepCMYK ? 4 : 3;
    result->cmykInverted = keepCMYK && info.saw_Adobe_marker ? 1 : 0;
    uint64_t bytesPerRow = (uint64_t)info.output_width * components;
    result->bytesPerRow = bytesPerRow;
    pixels = osprey_pixels_allocate(bytesPerRow * info.output_height);
    if (pixels == NULL) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "out of memory for %llu bytes of pixels",
                 (unsigned long long)(bytesPerRow * info.output_height));
        longjmp(error.jump, 3);
    }
    if (cmyk && !keepCMYK) {
        cmykRow = malloc((size_t)info.output_width * 4 * OSPREY_JPEG_ROWS_PER_READ);
        if (cmykRow == NULL) {
            snprintf(message, OSPREY_MESSAGE_CAPACITY, "out of memory");
            longjmp(error.jump, 3);
        }
    }
    result->components = components;
    if (request->converter.convert != NULL && request->converterComponents == components) {
        pipeline = osprey_row_pipeline_start(request->converter, pixels, bytesPerRow, info.output_width,
                                             info.output_height, components);
        if (pipeline == NULL) {
            snprintf(message, OSPREY_MESSAGE_CAPACITY, "out of memory");
            longjmp(error.jump, 3);
        }
    }

    if (dcImage != NULL) {
        if (!osprey_jpeg_dc_image_rows(dcImage, pixels, bytesPerRow, info.output_width, info.output_height)) {
            snprintf(message, OSPREY_MESSAGE_CAPACITY, "out of memory");
            longjmp(error.jump, 3);
        }
        rowsRead = info.output_height;
        osprey_row_pipeline_ready(pipeline, rowsRead);
        osprey_row_pipeline_finish(pipeline, rowsRead);
        pipeline = NULL;
        result->pixels = pixels;
        jpeg_destroy_decompress(&info);
        osprey_jpeg_dc_image_release(dcImage);
        return OSPREY_OK;
    }
    jpeg_start_decompress(&info);
    if (ownHuffman) {
        huffman = dcOnly != NULL ? osprey_jpeg_huffman_install(&info, dcOnly, dcOnlySize)
                                 : osprey_jpeg_huffman_install(&info, data, size);
        result->ownHuffman = huffman != NULL;
    }
    while (info.output_scanline < info.output_height) {
        // Several rows per call: with one, libjpeg-turbo's merged upsampler (4:2:0) decodes two rows into a spare
        // buffer and copies one out each time.
        JSAMPROW rows[OSPREY_JPEG_ROWS_PER_READ];
        uint32_t first = info.output_scanline;
        uint32_t count = info.output_height - first < OSPREY_JPEG_ROWS_PER_READ ? info.output_height - first
                                                                                : OSPREY_JPEG_ROWS_PER_READ;
        for (uint32_t i = 0; i < count; i++) {
            rows[i] = cmykRow != NULL ? cmykRow + (size_t)i * info.output_width * 4
                                      : pixels + (uint64_t)(first + i) * bytesPerRow;
        }
        JDIMENSION read = jpeg_read_scanlines(&info, rows, count);
        if (read == 0) {
            break;
        }
        if (cmykRow != NULL) {
            for (uint32_t i = 0; i < read; i++) {
                osprey_jpeg_cmyk_to_rgb(rows[i], pixels + (uint64_t)(first + i) * bytesPerRow, info.output_width,
                                        info.saw_Adobe_marker);
            }
        }
        rowsRead = info.output_scanline;
        osprey_row_pipeline_ready(pipeline, rowsRead);
    }
    osprey_row_pipeline_finish(pipeline, rowsRead);
    pipeline = NULL;
    // libjpeg fills what is missing from a truncated file with grey and only warns: that is an error unless asked.
    if (error.sawPrematureEnd) {
        if (!request->allowPartial) {
            snprintf(message, OSPREY_MESSAGE_CAPACITY, "Premature end of JPEG file");
            status = OSPREY_TRUNCATED;
            longjmp(error.jump, 3);
        }
        result->truncated = 1;
    }
    // Reading to EOI checks the markers after the last scan, as djpeg does: a damaged trailer is an error (kept as a
    // partial image with allowPartial, by the handler above).
    jpeg_finish_decompress(&info);
    result->pixels = pixels;
    free(cmykRow);
    jpeg_destroy_decompress(&info);
    free(dcOnly);
    osprey_jpeg_huffman_release(huffman);
    return OSPREY_OK;
}

int osprey_jpeg_decode(const uint8_t *data, size_t size, const osprey_jpeg_decode_request *request,
                       osprey_jpeg_decode_result *result, char *message) {
    int status = osprey_jpeg_decode_once(data, size, request, result, message, !request->libjpegHuffman);
    if (status == OSPREY_JPEG_DECODE_AGAIN) {
        // The scan is not as a clean file's: libjpeg's decoder reads it as it always has (its warnings, its
        // recovery, its errors), from the start.
        status = osprey_jpeg_decode_once(data, size, request, result, message, 0);
        result->ownHuffman = 2;
    }
    return status;
}
