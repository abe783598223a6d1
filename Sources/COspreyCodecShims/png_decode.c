#include "COspreyCodecShims.h"

#include "png_common.h"
#include "png_fast.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Copies the eXIf payload (a TIFF structure) if the chunk was read.
static void osprey_png_copy_exif(png_structp png, png_infop info, osprey_png_decode_result *result) {
#ifdef PNG_eXIf_SUPPORTED
    png_bytep exif = NULL;
    png_uint_32 length = 0;
    if (result->exif == NULL && info != NULL && png_get_eXIf_1(png, info, &length, &exif) != 0 && exif != NULL
        && length > 0) {
        result->exif = malloc(length);
        if (result->exif != NULL) {
            memcpy(result->exif, exif, length);
            result->exifLength = length;
        }
    }
#endif
}

int osprey_png_decode(const uint8_t *data, size_t size, const osprey_png_decode_request *request,
                      osprey_png_decode_result *result, char *message) {
    osprey_png_reader reader = {message, data, size, 0, 0};
    memset(result, 0, sizeof(*result));
    message[0] = '\0';
    OSPREY_OPEN(png, message);
    if (osprey_png_check_chunks(data, size, message) != 0) {
        return OSPREY_ERROR;
    }
    if (!request->libpngOnly && osprey_png_decode_fast(data, size, request, result)) {
        return OSPREY_OK;
    }
    png_structp png = osprey_png_create(&reader);
    if (png == NULL) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "png_create_read_struct failed");
        return OSPREY_ERROR;
    }
    png_infop info = png_create_info_struct(png);
    png_infop endInfo = png_create_info_struct(png);
    if (info == NULL || endInfo == NULL) {
        png_destroy_read_struct(&png, &info, &endInfo);
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "png_create_info_struct failed");
        return OSPREY_ERROR;
    }
    // Written after setjmp and read after a longjmp: volatile, so the values are not kept in registers.
    uint8_t *volatile pixels = NULL;
    volatile uint64_t rowsDone = 0;
    volatile int status = OSPREY_ERROR;

    if (setjmp(png_jmpbuf(png))) {
        if (pixels != NULL && rowsDone > 0 && request->allowPartial && status != OSPREY_CANCELLED) {
            // The data ended (or broke) mid-image: with allowPartial, keep the rows decoded so far.
            result->pixels = pixels;
            result->truncated = 1;
            png_destroy_read_struct(&png, &info, &endInfo);
            return OSPREY_OK;
        }
        osprey_pixels_free(pixels, (size_t)result->bytesPerRow * result->height);
        free(result->exif);
        result->exif = NULL;
        result->exifLength = 0;
        png_destroy_read_struct(&png, &info, &endInfo);
        // Running out of data mid-image is truncation, which allowPartial accepts; anything else is damage.
        int truncated = reader.hitEnd || strstr(message, "Not enough image data") != NULL;
        return truncated && status == OSPREY_ERROR ? OSPREY_TRUNCATED : status;
    }
    png_read_info(png, info);
    png_uint_32 width = png_get_image_width(png, info);
    png_uint_32 height = png_get_image_height(png, info);
    if (request->maxPixels > 0 && (uint64_t)width * height > request->maxPixels) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "%ux%u exceeds the limit of %llu pixels", width, height,
                 (unsigned long long)request->maxPixels);
        status = OSPREY_LIMIT_EXCEEDED;
        png_longjmp(png, 1);
    }
    int colorType = png_get_color_type(png, info);
    int bitDepth = png_get_bit_depth(png, info);
    // Everything to 8 bits per channel in its natural layout: palette → RGB, low-bit gray → 8-bit, tRNS → alpha,
    // 16-bit → 8-bit (scaled with rounding, not truncated).
    if (colorType == PNG_COLOR_TYPE_PALETTE) {
        png_set_palette_to_rgb(png);
    }
    if (colorType == PNG_COLOR_TYPE_GRAY && bitDepth < 8) {
        png_set_expand_gray_1_2_4_to_8(png);
    }
    if (png_get_valid(png, info, PNG_INFO_tRNS)) {
        png_set_tRNS_to_alpha(png);
    }
    if (bitDepth == 16) {
        png_set_scale_16(png);
    }
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    osprey_png_copy_exif(png, info, result);

    uint32_t components = png_get_channels(png, info);
    uint64_t bytesPerRow = (uint64_t)width * components;
    if (components < 1 || components > 4 || png_get_rowbytes(png, info) != bytesPerRow) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "unexpected row layout after transforms");
        png_longjmp(png, 1);
    }
    // Zeroed, so rows a truncated file never reached are transparent black rather than garbage.
    result->width = width;
    result->height = height;
    result->components = components;
    result->bytesPerRow = bytesPerRow;
    pixels = osprey_pixels_allocate(bytesPerRow * height);
    if (pixels == NULL) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "out of memory for %llu bytes of pixels",
                 (unsigned long long)(bytesPerRow * height));
        png_longjmp(png, 1);
    }
    for (int pass = 0; pass < passes; pass++) {
        for (png_uint_32 y = 0; y < height; y++) {
            if (request->cancelled != NULL && osprey_cancel_get(request->cancelled)) {
                snprintf(message, OSPREY_MESSAGE_CAPACITY, "cancelled");
                status = OSPREY_CANCELLED;
                png_longjmp(png, 1);
            }
            png_read_row(png, pixels + (uint64_t)y * bytesPerRow, NULL);
            rowsDone++;
        }
    }
    result->pixels = pixels;
    // Every pixel is decoded: chunks after the image (and a missing IEND) cannot take it away.
    if (setjmp(png_jmpbuf(png)) == 0) {
        png_read_end(png, endInfo);
        osprey_png_copy_exif(png, endInfo, result);
    }
    png_destroy_read_struct(&png, &info, &endInfo);
    return OSPREY_OK;
}
