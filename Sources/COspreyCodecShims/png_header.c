#include "COspreyCodecShims.h"

#include "png_common.h"

#include <setjmp.h>
#include <stdio.h>

int osprey_png_read_header(const uint8_t *data, size_t size, osprey_png_header *header, char *message) {
    osprey_png_reader reader = {message, data, size, 0, 0};
    message[0] = '\0';
    OSPREY_OPEN(png, message);
    if (osprey_png_check_chunks(data, size, message) != 0) {
        return -1;
    }
    png_structp png = osprey_png_create(&reader);
    if (png == NULL) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "png_create_read_struct failed");
        return -1;
    }
    png_infop info = png_create_info_struct(png);
    if (info == NULL) {
        png_destroy_read_struct(&png, NULL, NULL);
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "png_create_info_struct failed");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    png_read_info(png, info);
    header->width = png_get_image_width(png, info);
    header->height = png_get_image_height(png, info);
    header->bitDepth = png_get_bit_depth(png, info);
    header->colorType = png_get_color_type(png, info);
    header->interlaced = png_get_interlace_type(png, info) != PNG_INTERLACE_NONE ? 1 : 0;
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
}
