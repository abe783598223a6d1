#include "COspreyCodecShims.h"

#include "jpeg_error.h"

#include <string.h>
#include <jconfig.h>

int osprey_jpeg_read_header(const uint8_t *data, size_t size, osprey_jpeg_header *header, char *message) {
    struct jpeg_decompress_struct info;
    osprey_jpeg_error error;
    OSPREY_OPEN(jpeg, message);
    osprey_jpeg_error_install(&error, &info, message);
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&info);
        return -1;
    }
    if (size == 0) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "empty input");
        return -1;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, data, (unsigned long)size);
    jpeg_read_header(&info, TRUE);
    header->width = info.image_width;
    header->height = info.image_height;
    header->components = info.num_components;
    header->precision = info.data_precision;
    header->colorSpace = (int32_t)info.jpeg_color_space;
    header->progressive = info.progressive_mode ? 1 : 0;
    header->arithmetic = info.arith_code ? 1 : 0;
    // jpeg_read_header has sized every component in blocks (initial_setup, at the first SOS).
    header->coefficientBytes = 0;
    if (info.progressive_mode) {
        for (int c = 0; c < info.num_components; c++) {
            header->coefficientBytes += (uint64_t)info.comp_info[c].width_in_blocks * info.comp_info[c].height_in_blocks
                                        * sizeof(JBLOCK);
        }
    }
    jpeg_destroy_decompress(&info);
    return 0;
}

int osprey_jpeg_turbo_version_number(void) {
    return LIBJPEG_TURBO_VERSION_NUMBER;
}
