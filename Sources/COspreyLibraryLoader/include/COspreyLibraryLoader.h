// The C libraries Osprey calls, none of them linked: each is opened with dlopen when first needed rather than when
// the process starts. Linked, libavif, libheif and libjxl cost about 10 ms of every start-up (their dependencies'
// static initialisers — libhwy measures its timer, libde265 builds tables — and some forty more shared objects to
// map), which every `osprey --version`, every `osprey info` of a JPEG and every short-lived process pays; each of the
// others (libjpeg, TurboJPEG, libpng, libdeflate, libimagequant, libwebp, libwebpdemux, libwebpmux, giflib, Little
// CMS, SQLite) is one more shared object to map and relocate, for processes that mostly need one or two of them. The
// functions Osprey calls are looked up in a table per library; the headers' types and constants are used as they are.
//
// A library is found by its shared-object names (the one the headers were built against first) and accepted only
// when its run-time version has the headers' ABI: libavif's and libjxl's major and minor version, libheif's major
// version and at least its minor (libheif 1.x only adds functions), libpng's major and minor, libwebp's, libwebpdemux's
// and libwebpmux's own ABI checks, SQLite from 3.8.7 (the first with `sqlite3_bind_blob64`; its interface only grows),
// any Little CMS 2; libjpeg checks its version and structure sizes itself in jpeg_CreateDecompress.
//
// When liblcms2 cannot be opened, `osprey_lcms_functions_or_stand_ins` gives stand-ins that make nothing (every
// profile, curve and transform comes back NULL): images decode as untagged, with a warning that says why
// (`osprey_lcms_failure`).
#ifndef OSPREY_LIBRARY_LOADER_H
#define OSPREY_LIBRARY_LOADER_H

#include <stdio.h>  // before jpeglib.h, which uses FILE

#include <avif/avif.h>
#include <gif_lib.h>
#include <jpeglib.h>
#include <jxl/decode.h>
#include <jxl/encode.h>
#include <lcms2.h>
#include <libdeflate.h>
#include <libimagequant.h>
#include <libheif/heif.h>
#include <png.h>
#include <sqlite3.h>
#include <turbojpeg.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include <webp/encode.h>
#include <webp/mux.h>

#define OSPREY_FUNCTION(name) __typeof__(name) *_Nonnull name

/// The libavif functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(avifDecoderCreate);
    OSPREY_FUNCTION(avifDecoderDestroy);
    OSPREY_FUNCTION(avifDecoderNextImage);
    OSPREY_FUNCTION(avifDecoderNthImageTiming);
    OSPREY_FUNCTION(avifDecoderParse);
    OSPREY_FUNCTION(avifDecoderSetIOMemory);
    OSPREY_FUNCTION(avifEncoderAddImage);
    OSPREY_FUNCTION(avifEncoderCreate);
    OSPREY_FUNCTION(avifEncoderDestroy);
    OSPREY_FUNCTION(avifEncoderFinish);
    OSPREY_FUNCTION(avifImageCreate);
    OSPREY_FUNCTION(avifImageDestroy);
    OSPREY_FUNCTION(avifImageRGBToYUV);
    OSPREY_FUNCTION(avifImageSetMetadataExif);
    OSPREY_FUNCTION(avifImageSetMetadataXMP);
    OSPREY_FUNCTION(avifImageSetProfileICC);
    OSPREY_FUNCTION(avifImageYUVToRGB);
    OSPREY_FUNCTION(avifRGBImageSetDefaults);
    OSPREY_FUNCTION(avifRWDataFree);
    OSPREY_FUNCTION(avifResultToString);
    OSPREY_FUNCTION(avifVersion);
} osprey_avif_functions;

/// The libheif functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(heif_context_alloc);
    OSPREY_FUNCTION(heif_context_free);
    OSPREY_FUNCTION(heif_context_get_primary_image_handle);
    OSPREY_FUNCTION(heif_context_read_from_memory_without_copy);
    OSPREY_FUNCTION(heif_context_set_maximum_image_size_limit);
    OSPREY_FUNCTION(heif_decode_image);
    OSPREY_FUNCTION(heif_decoding_options_alloc);
    OSPREY_FUNCTION(heif_decoding_options_free);
    OSPREY_FUNCTION(heif_image_get_bits_per_pixel_range);
    OSPREY_FUNCTION(heif_image_get_height);
    OSPREY_FUNCTION(heif_image_get_plane_readonly);
    OSPREY_FUNCTION(heif_image_get_width);
    OSPREY_FUNCTION(heif_image_handle_get_height);
    OSPREY_FUNCTION(heif_image_handle_get_list_of_metadata_block_IDs);
    OSPREY_FUNCTION(heif_image_handle_get_luma_bits_per_pixel);
    OSPREY_FUNCTION(heif_image_handle_get_metadata);
    OSPREY_FUNCTION(heif_image_handle_get_metadata_content_type);
    OSPREY_FUNCTION(heif_image_handle_get_metadata_size);
    OSPREY_FUNCTION(heif_image_handle_get_metadata_type);
    OSPREY_FUNCTION(heif_image_handle_get_nclx_color_profile);
    OSPREY_FUNCTION(heif_image_handle_get_number_of_metadata_blocks);
    OSPREY_FUNCTION(heif_image_handle_get_raw_color_profile);
    OSPREY_FUNCTION(heif_image_handle_get_raw_color_profile_size);
    OSPREY_FUNCTION(heif_image_handle_get_width);
    OSPREY_FUNCTION(heif_image_handle_has_alpha_channel);
    OSPREY_FUNCTION(heif_image_handle_release);
    OSPREY_FUNCTION(heif_image_release);
    OSPREY_FUNCTION(heif_init);
    OSPREY_FUNCTION(heif_nclx_color_profile_free);
    OSPREY_FUNCTION(heif_get_version_number_major);
    OSPREY_FUNCTION(heif_get_version_number_minor);
} osprey_heif_functions;

/// The libjxl functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(JxlColorEncodingSetToSRGB);
    OSPREY_FUNCTION(JxlDecoderCloseInput);
    OSPREY_FUNCTION(JxlDecoderCreate);
    OSPREY_FUNCTION(JxlDecoderDestroy);
    OSPREY_FUNCTION(JxlDecoderFlushImage);
    OSPREY_FUNCTION(JxlDecoderGetBasicInfo);
    OSPREY_FUNCTION(JxlDecoderGetColorAsEncodedProfile);
    OSPREY_FUNCTION(JxlDecoderGetColorAsICCProfile);
    OSPREY_FUNCTION(JxlDecoderGetFrameHeader);
    OSPREY_FUNCTION(JxlDecoderGetICCProfileSize);
    OSPREY_FUNCTION(JxlDecoderImageOutBufferSize);
    OSPREY_FUNCTION(JxlDecoderProcessInput);
    OSPREY_FUNCTION(JxlDecoderReleaseJPEGBuffer);
    OSPREY_FUNCTION(JxlDecoderSetDesiredIntensityTarget);
    OSPREY_FUNCTION(JxlDecoderSetImageOutBuffer);
    OSPREY_FUNCTION(JxlDecoderSetInput);
    OSPREY_FUNCTION(JxlDecoderSetJPEGBuffer);
    OSPREY_FUNCTION(JxlDecoderSetKeepOrientation);
    OSPREY_FUNCTION(JxlDecoderSetPreferredColorProfile);
    OSPREY_FUNCTION(JxlDecoderSubscribeEvents);
    OSPREY_FUNCTION(JxlEncoderAddImageFrame);
    OSPREY_FUNCTION(JxlEncoderCloseInput);
    OSPREY_FUNCTION(JxlEncoderCreate);
    OSPREY_FUNCTION(JxlEncoderDestroy);
    OSPREY_FUNCTION(JxlEncoderFrameSettingsCreate);
    OSPREY_FUNCTION(JxlEncoderFrameSettingsSetOption);
    OSPREY_FUNCTION(JxlEncoderGetError);
    OSPREY_FUNCTION(JxlEncoderInitBasicInfo);
    OSPREY_FUNCTION(JxlEncoderInitFrameHeader);
    OSPREY_FUNCTION(JxlEncoderProcessOutput);
    OSPREY_FUNCTION(JxlEncoderSetBasicInfo);
    OSPREY_FUNCTION(JxlEncoderSetColorEncoding);
    OSPREY_FUNCTION(JxlEncoderSetFrameDistance);
    OSPREY_FUNCTION(JxlEncoderSetFrameHeader);
    OSPREY_FUNCTION(JxlEncoderSetFrameLossless);
    OSPREY_FUNCTION(JxlEncoderSetICCProfile);
    OSPREY_FUNCTION(JxlDecoderVersion);
} osprey_jxl_functions;

/// The Little CMS functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(cmsBuildGamma);
    OSPREY_FUNCTION(cmsBuildParametricToneCurve);
    OSPREY_FUNCTION(cmsCloseProfile);
    OSPREY_FUNCTION(cmsCreateContext);
    OSPREY_FUNCTION(cmsCreateGrayProfileTHR);
    OSPREY_FUNCTION(cmsCreateRGBProfileTHR);
    OSPREY_FUNCTION(cmsCreateTransformTHR);
    OSPREY_FUNCTION(cmsCreate_sRGBProfileTHR);
    OSPREY_FUNCTION(cmsD50_xyY);
    OSPREY_FUNCTION(cmsDeleteTransform);
    OSPREY_FUNCTION(cmsDoTransform);
    OSPREY_FUNCTION(cmsDoTransformLineStride);
    OSPREY_FUNCTION(cmsEvalToneCurveFloat);
    OSPREY_FUNCTION(cmsFreeToneCurve);
    OSPREY_FUNCTION(cmsGetColorSpace);
    OSPREY_FUNCTION(cmsGetProfileInfoASCII);
    OSPREY_FUNCTION(cmsIsCLUT);
    OSPREY_FUNCTION(cmsIsMatrixShaper);
    OSPREY_FUNCTION(cmsOpenProfileFromMemTHR);
    OSPREY_FUNCTION(cmsReadTag);
    OSPREY_FUNCTION(cmsSaveProfileToMem);
    OSPREY_FUNCTION(cmsSetLogErrorHandlerTHR);
} osprey_lcms_functions;

/// The SQLite functions Osprey calls.
typedef struct {
    OSPREY_FUNCTION(sqlite3_bind_blob64);
    OSPREY_FUNCTION(sqlite3_bind_double);
    OSPREY_FUNCTION(sqlite3_bind_int64);
    OSPREY_FUNCTION(sqlite3_bind_null);
    OSPREY_FUNCTION(sqlite3_bind_text);
    OSPREY_FUNCTION(sqlite3_bind_zeroblob);
    OSPREY_FUNCTION(sqlite3_busy_timeout);
    OSPREY_FUNCTION(sqlite3_clear_bindings);
    OSPREY_FUNCTION(sqlite3_close);
    OSPREY_FUNCTION(sqlite3_column_blob);
    OSPREY_FUNCTION(sqlite3_column_bytes);
    OSPREY_FUNCTION(sqlite3_column_count);
    OSPREY_FUNCTION(sqlite3_column_double);
    OSPREY_FUNCTION(sqlite3_column_int64);
    OSPREY_FUNCTION(sqlite3_column_text);
    OSPREY_FUNCTION(sqlite3_column_type);
    OSPREY_FUNCTION(sqlite3_errmsg);
    OSPREY_FUNCTION(sqlite3_exec);
    OSPREY_FUNCTION(sqlite3_finalize);
    OSPREY_FUNCTION(sqlite3_free);
    OSPREY_FUNCTION(sqlite3_libversion_number);
    OSPREY_FUNCTION(sqlite3_open_v2);
    OSPREY_FUNCTION(sqlite3_prepare_v2);
    OSPREY_FUNCTION(sqlite3_reset);
    OSPREY_FUNCTION(sqlite3_step);
} osprey_sqlite_functions;

#define OSPREY_FUNCTION_FIELD(name) OSPREY_FUNCTION(name);

// The classic codecs' libraries: one list of names per library gives both its table and its look-ups.

/// The libjpeg functions Osprey calls (from the shims' JPEG decoder and header reader).
#define OSPREY_JPEG_FUNCTIONS(F) \
    F(jpeg_CreateDecompress) F(jpeg_abort_decompress) F(jpeg_calc_output_dimensions) F(jpeg_destroy_decompress) \
    F(jpeg_finish_decompress) F(jpeg_mem_src) F(jpeg_read_header) F(jpeg_read_scanlines) F(jpeg_start_decompress) \
    F(jpeg_std_error)
typedef struct {
    OSPREY_JPEG_FUNCTIONS(OSPREY_FUNCTION_FIELD)
} osprey_jpeg_functions;

/// The TurboJPEG functions Osprey calls (the JPEG encoder).
#define OSPREY_TURBOJPEG_FUNCTIONS(F) \
    F(tjCompress2) F(tjDestroy) F(tjFree) F(tjGetErrorStr2) F(tjInitCompress)
typedef struct {
    OSPREY_TURBOJPEG_FUNCTIONS(OSPREY_FUNCTION_FIELD)
} osprey_turbojpeg_functions;

/// The libpng functions Osprey calls (from the shims' PNG decoder, encoder and header reader).
#define OSPREY_PNG_FUNCTIONS(F) \
    F(png_access_version_number) F(png_create_info_struct) F(png_create_read_struct) F(png_create_write_struct) \
    F(png_destroy_read_struct) F(png_destroy_write_struct) F(png_error) F(png_get_bit_depth) F(png_get_channels) \
    F(png_get_color_type) F(png_get_eXIf_1) F(png_get_error_ptr) F(png_get_image_height) F(png_get_image_width) \
    F(png_get_interlace_type) F(png_get_io_ptr) F(png_get_rowbytes) F(png_get_valid) F(png_longjmp) F(png_read_end) \
    F(png_read_info) F(png_read_row) F(png_read_update_info) F(png_set_IHDR) F(png_set_chunk_cache_max) \
    F(png_set_chunk_malloc_max) F(png_set_compression_level) F(png_set_compression_mem_level) F(png_set_filter) \
    F(png_set_expand_gray_1_2_4_to_8) F(png_set_interlace_handling) F(png_set_keep_unknown_chunks) \
    F(png_set_longjmp_fn) F(png_set_palette_to_rgb) F(png_set_PLTE) F(png_set_packing) F(png_set_read_fn) \
    F(png_set_scale_16) F(png_set_tRNS) F(png_set_tRNS_to_alpha) F(png_set_write_fn) F(png_write_end) \
    F(png_write_info) F(png_write_row)
typedef struct {
    OSPREY_PNG_FUNCTIONS(OSPREY_FUNCTION_FIELD)
} osprey_png_functions;

/// The libwebp functions Osprey calls.
#define OSPREY_WEBP_FUNCTIONS(F) \
    F(WebPConfigInitInternal) F(WebPDecode) F(WebPEncode) F(WebPFree) F(WebPFreeDecBuffer) F(WebPGetDecoderVersion) \
    F(WebPGetFeaturesInternal) F(WebPIAppend) F(WebPIDecGetRGB) F(WebPIDecode) F(WebPIDelete) \
    F(WebPInitDecoderConfigInternal) F(WebPMemoryWrite) F(WebPMemoryWriterClear) F(WebPMemoryWriterInit) \
    F(WebPPictureFree) F(WebPPictureImportRGB) F(WebPPictureImportRGBA) F(WebPPictureInitInternal) \
    F(WebPValidateConfig)
typedef struct {
    OSPREY_WEBP_FUNCTIONS(OSPREY_FUNCTION_FIELD)
} osprey_webp_functions;

/// The libwebpdemux functions Osprey calls (animations, and the chunks that carry metadata).
#define OSPREY_WEBPDEMUX_FUNCTIONS(F) \
    F(WebPAnimDecoderDelete) F(WebPAnimDecoderGetInfo) F(WebPAnimDecoderGetNext) F(WebPAnimDecoderHasMoreFrames) \
    F(WebPAnimDecoderNewInternal) F(WebPAnimDecoderOptionsInitInternal) F(WebPDemuxDelete) F(WebPDemuxGetChunk) \
    F(WebPDemuxGetFrame) F(WebPDemuxGetI) F(WebPDemuxInternal) F(WebPDemuxNextFrame) \
    F(WebPDemuxReleaseChunkIterator) F(WebPDemuxReleaseIterator)
typedef struct {
    OSPREY_WEBPDEMUX_FUNCTIONS(OSPREY_FUNCTION_FIELD)
} osprey_webpdemux_functions;

/// The libwebpmux functions Osprey calls (animated encoding, and writing metadata chunks).
#define OSPREY_WEBPMUX_FUNCTIONS(F) \
    F(WebPAnimEncoderAdd) F(WebPAnimEncoderAssemble) F(WebPAnimEncoderDelete) F(WebPAnimEncoderGetError) \
    F(WebPAnimEncoderNewInternal) F(WebPAnimEncoderOptionsInitInternal) F(WebPMuxAssemble) F(WebPMuxCreateInternal) \
    F(WebPMuxDelete) F(WebPMuxSetChunk)
typedef struct {
    OSPREY_WEBPMUX_FUNCTIONS(OSPREY_FUNCTION_FIELD)
} osprey_webpmux_functions;

/// The giflib functions Osprey calls.
#define OSPREY_GIF_FUNCTIONS(F) \
    F(DGifCloseFile) F(DGifExtensionToGCB) F(DGifGetCode) F(DGifGetCodeNext) F(DGifGetExtension) \
    F(DGifGetExtensionNext) F(DGifGetImageDesc) F(DGifGetRecordType) F(DGifOpen) F(EGifCloseFile) \
    F(EGifGCBToExtension) F(EGifOpen) F(EGifPutExtension) F(EGifPutExtensionBlock) F(EGifPutExtensionLeader) \
    F(EGifPutExtensionTrailer) F(EGifPutImageDesc) F(EGifPutLine) F(EGifPutScreenDesc) F(EGifSetGifVersion) \
    F(GifErrorString) F(GifFreeMapObject) F(GifMakeMapObject) F(GifQuantizeBuffer)
typedef struct {
    OSPREY_GIF_FUNCTIONS(OSPREY_FUNCTION_FIELD)
} osprey_gif_functions;

/// The libdeflate functions Osprey calls.
#define OSPREY_DEFLATE_FUNCTIONS(F) \
    F(libdeflate_alloc_compressor) F(libdeflate_alloc_decompressor) F(libdeflate_crc32) \
    F(libdeflate_free_compressor) F(libdeflate_free_decompressor) F(libdeflate_zlib_compress) \
    F(libdeflate_zlib_compress_bound) F(libdeflate_zlib_decompress) F(libdeflate_zlib_decompress_ex)
typedef struct {
    OSPREY_DEFLATE_FUNCTIONS(OSPREY_FUNCTION_FIELD)
} osprey_deflate_functions;

/// The libimagequant functions Osprey calls (palette PNG).
#define OSPREY_IMAGEQUANT_FUNCTIONS(F) \
    F(liq_attr_create) F(liq_attr_destroy) F(liq_get_palette) F(liq_image_create_rgba) F(liq_image_destroy) \
    F(liq_image_quantize) F(liq_result_destroy) F(liq_set_dithering_level) F(liq_set_quality) F(liq_set_speed) \
    F(liq_version) F(liq_write_remapped_image)
typedef struct {
    OSPREY_IMAGEQUANT_FUNCTIONS(OSPREY_FUNCTION_FIELD)
} osprey_imagequant_functions;

#undef OSPREY_FUNCTION_FIELD
#undef OSPREY_FUNCTION

/// libavif's functions, the library loaded on the first call (from any thread, once); NULL when it cannot be, with
/// `*reason` (when `reason` is not NULL) saying why, in a static string.
const osprey_avif_functions *_Nullable osprey_avif_functions_load(const char *_Nullable *_Nullable reason);
/// libheif's functions, as `osprey_avif_functions_load` gives libavif's; `heif_init` has been called.
const osprey_heif_functions *_Nullable osprey_heif_functions_load(const char *_Nullable *_Nullable reason);
/// libjxl's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_jxl_functions *_Nullable osprey_jxl_functions_load(const char *_Nullable *_Nullable reason);
/// Little CMS's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_lcms_functions *_Nullable osprey_lcms_functions_load(const char *_Nullable *_Nullable reason);
/// Little CMS's functions, or the stand-ins when it cannot be opened.
const osprey_lcms_functions *_Nonnull osprey_lcms_functions_or_stand_ins(void);
/// Why Little CMS could not be opened (a static message), or NULL when it was; loads it first if need be.
const char *_Nullable osprey_lcms_failure(void);
/// SQLite's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_sqlite_functions *_Nullable osprey_sqlite_functions_load(const char *_Nullable *_Nullable reason);

/// libjpeg's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_jpeg_functions *_Nullable osprey_jpeg_functions_load(const char *_Nullable *_Nullable reason);
/// TurboJPEG's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_turbojpeg_functions *_Nullable osprey_turbojpeg_functions_load(const char *_Nullable *_Nullable reason);
/// libpng's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_png_functions *_Nullable osprey_png_functions_load(const char *_Nullable *_Nullable reason);
/// libwebp's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_webp_functions *_Nullable osprey_webp_functions_load(const char *_Nullable *_Nullable reason);
/// libwebpdemux's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_webpdemux_functions *_Nullable osprey_webpdemux_functions_load(const char *_Nullable *_Nullable reason);
/// libwebpmux's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_webpmux_functions *_Nullable osprey_webpmux_functions_load(const char *_Nullable *_Nullable reason);
/// giflib's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_gif_functions *_Nullable osprey_gif_functions_load(const char *_Nullable *_Nullable reason);
/// libdeflate's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_deflate_functions *_Nullable osprey_deflate_functions_load(const char *_Nullable *_Nullable reason);
/// libimagequant's functions, as `osprey_avif_functions_load` gives libavif's.
const osprey_imagequant_functions *_Nullable osprey_imagequant_functions_load(const char *_Nullable *_Nullable reason);
/// The shims' tables, for their calls once their entry point has loaded the library (`osprey_X_functions_load` did not
/// return NULL): before that, every function in them is NULL.
extern osprey_jpeg_functions osprey_jpeg_table;
extern osprey_png_functions osprey_png_table;
extern osprey_deflate_functions osprey_deflate_table;
extern osprey_imagequant_functions osprey_imagequant_table;

#endif
