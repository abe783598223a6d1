#include "jpeg_error.h"
#include "COspreyCodecShims.h"

#include <jerror.h>
#include <string.h>

// libjpeg's default error_exit calls exit(). Ours formats the message and longjmps back to the shim that set the
// jump buffer, so a hostile file becomes an error value instead of a dead process.
static void osprey_jpeg_error_exit(j_common_ptr info) {
    osprey_jpeg_error *error = (osprey_jpeg_error *)info->err;
    char buffer[JMSG_LENGTH_MAX];
    error->base.format_message(info, buffer);
    snprintf(error->message, OSPREY_MESSAGE_CAPACITY, "%s", buffer);
    longjmp(error->jump, 1);
}

// Warnings (corrupt data the library recovers from) must not reach a server's stderr; the one that matters, the
// premature end of data, is remembered so a truncated file can be refused.
static void osprey_jpeg_emit_message(j_common_ptr info, int level) {
    osprey_jpeg_error *error = (osprey_jpeg_error *)info->err;
    if (level < 0) {
        info->err->num_warnings++;
        if (info->err->msg_code == JWRN_JPEG_EOF) {
            error->sawPrematureEnd = 1;
        }
    }
}

void osprey_jpeg_error_install(osprey_jpeg_error *error, struct jpeg_decompress_struct *info, char *message) {
    memset(info, 0, sizeof(*info));
    info->err = jpeg_std_error(&error->base);
    error->base.error_exit = osprey_jpeg_error_exit;
    error->base.emit_message = osprey_jpeg_emit_message;
    error->message = message;
    error->sawPrematureEnd = 0;
    error->huffman = NULL;
    message[0] = '\0';
}
