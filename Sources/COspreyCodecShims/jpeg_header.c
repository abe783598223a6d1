#include "COspreyCodecShims.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <jpeglib.h>
#include <jconfig.h>

// libjpeg's default error_exit calls exit(). Ours formats the message and longjmps back to the shim that set the
// jump buffer, so a hostile file becomes an error value instead of a dead process.
typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *message;
} osprey_jpeg_error;

static void osprey_jpeg_error_exit(j_common_ptr info) {
    osprey_jpeg_error *error = (osprey_jpeg_error *)info->err;
    char buffer[JMSG_LENGTH_MAX];
    error->base.format_message(info, buffer);
    snprintf(error->message, OSPREY_MESSAGE_CAPACITY, "%s", buffer);
    longjmp(error->jump, 1);
}

// Warnings (corrupt data the library can recover from) must not reach stderr of a server process.
static void osprey_jpeg_emit_message(j_common_ptr info, int level) {
    (void)level;
    info->err->num_warnings++;
}

int osprey_jpeg_read_header(const uint8_t *data, size_t size, osprey_jpeg_header *header, char *message) {
    struct jpeg_decompress_struct info;
    osprey_jpeg_error error;
    message[0] = '\0';
    memset(&info, 0, sizeof(info));
    info.err = jpeg_std_error(&error.base);
    error.base.error_exit = osprey_jpeg_error_exit;
    error.base.emit_message = osprey_jpeg_emit_message;
    error.message = message;
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
    header->colorSpace = (int32_t)info.jpeg_color_space;
    header->progressive = info.progressive_mode ? 1 : 0;
    header->arithmetic = info.arith_code ? 1 : 0;
    jpeg_destroy_decompress(&info);
    return 0;
}

int osprey_jpeg_turbo_version_number(void) {
    return LIBJPEG_TURBO_VERSION_NUMBER;
}
