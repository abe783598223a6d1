#ifndef OSPREY_SHIM_LIBRARIES_H
#define OSPREY_SHIM_LIBRARIES_H

// libjpeg, libpng, libdeflate and libimagequant as the shims call them (private to this target). None of them is
// linked: COspreyLibraryLoader opens each when first needed (its header says why) and fills a table of its functions.
// Every entry point that uses one opens it first with OSPREY_OPEN; past that, the libraries' own names below stand for
// the tables' functions, so that the shims read as the libraries' documentation does.

#include "COspreyLibraryLoader.h"
#include "COspreyCodecShims.h"

/// Opens `library` (`jpeg`, `png`, `deflate` or `imagequant`: once per process, from any thread) or returns
/// OSPREY_ERROR from the entry point with the reason in `message`.
#define OSPREY_OPEN(library, message)                                                                                  \
    do {                                                                                                               \
        const char *reason = NULL;                                                                                     \
        if (osprey_##library##_functions_load(&reason) == NULL) {                                                      \
            snprintf((message), OSPREY_MESSAGE_CAPACITY, "%s", reason);                                                \
            return OSPREY_ERROR;                                                                                       \
        }                                                                                                              \
    } while (0)


#define jpeg_CreateDecompress (osprey_jpeg_table.jpeg_CreateDecompress)
#define jpeg_abort_decompress (osprey_jpeg_table.jpeg_abort_decompress)
#define jpeg_calc_output_dimensions (osprey_jpeg_table.jpeg_calc_output_dimensions)
#define jpeg_destroy_decompress (osprey_jpeg_table.jpeg_destroy_decompress)
#define jpeg_finish_decompress (osprey_jpeg_table.jpeg_finish_decompress)
#define jpeg_mem_src (osprey_jpeg_table.jpeg_mem_src)
#define jpeg_read_header (osprey_jpeg_table.jpeg_read_header)
#define jpeg_read_scanlines (osprey_jpeg_table.jpeg_read_scanlines)
#define jpeg_start_decompress (osprey_jpeg_table.jpeg_start_decompress)
#define jpeg_std_error (osprey_jpeg_table.jpeg_std_error)

#define png_access_version_number (osprey_png_table.png_access_version_number)
#define png_create_info_struct (osprey_png_table.png_create_info_struct)
#define png_create_read_struct (osprey_png_table.png_create_read_struct)
#define png_create_write_struct (osprey_png_table.png_create_write_struct)
#define png_destroy_read_struct (osprey_png_table.png_destroy_read_struct)
#define png_destroy_write_struct (osprey_png_table.png_destroy_write_struct)
#define png_error (osprey_png_table.png_error)
#define png_get_bit_depth (osprey_png_table.png_get_bit_depth)
#define png_get_channels (osprey_png_table.png_get_channels)
#define png_get_color_type (osprey_png_table.png_get_color_type)
#define png_get_eXIf_1 (osprey_png_table.png_get_eXIf_1)
#define png_get_error_ptr (osprey_png_table.png_get_error_ptr)
#define png_get_image_height (osprey_png_table.png_get_image_height)
#define png_get_image_width (osprey_png_table.png_get_image_width)
#define png_get_interlace_type (osprey_png_table.png_get_interlace_type)
#define png_get_io_ptr (osprey_png_table.png_get_io_ptr)
#define png_get_rowbytes (osprey_png_table.png_get_rowbytes)
#define png_get_valid (osprey_png_table.png_get_valid)
#define png_longjmp (osprey_png_table.png_longjmp)
#define png_read_end (osprey_png_table.png_read_end)
#define png_read_info (osprey_png_table.png_read_info)
#define png_read_row (osprey_png_table.png_read_row)
#define png_read_update_info (osprey_png_table.png_read_update_info)
#define png_set_IHDR (osprey_png_table.png_set_IHDR)
#define png_set_chunk_cache_max (osprey_png_table.png_set_chunk_cache_max)
#define png_set_chunk_malloc_max (osprey_png_table.png_set_chunk_malloc_max)
#define png_set_compression_level (osprey_png_table.png_set_compression_level)
#define png_set_compression_mem_level (osprey_png_table.png_set_compression_mem_level)
#define png_set_expand_gray_1_2_4_to_8 (osprey_png_table.png_set_expand_gray_1_2_4_to_8)
#define png_set_filter (osprey_png_table.png_set_filter)
#define png_set_interlace_handling (osprey_png_table.png_set_interlace_handling)
#define png_set_keep_unknown_chunks (osprey_png_table.png_set_keep_unknown_chunks)
#define png_set_longjmp_fn (osprey_png_table.png_set_longjmp_fn)
#define png_set_palette_to_rgb (osprey_png_table.png_set_palette_to_rgb)
#define png_set_PLTE (osprey_png_table.png_set_PLTE)
#define png_set_packing (osprey_png_table.png_set_packing)
#define png_set_read_fn (osprey_png_table.png_set_read_fn)
#define png_set_scale_16 (osprey_png_table.png_set_scale_16)
#define png_set_tRNS (osprey_png_table.png_set_tRNS)
#define png_set_tRNS_to_alpha (osprey_png_table.png_set_tRNS_to_alpha)
#define png_set_write_fn (osprey_png_table.png_set_write_fn)
#define png_write_end (osprey_png_table.png_write_end)
#define png_write_info (osprey_png_table.png_write_info)
#define png_write_row (osprey_png_table.png_write_row)

#define libdeflate_alloc_compressor (osprey_deflate_table.libdeflate_alloc_compressor)
#define libdeflate_alloc_decompressor (osprey_deflate_table.libdeflate_alloc_decompressor)
#define libdeflate_crc32 (osprey_deflate_table.libdeflate_crc32)
#define libdeflate_free_compressor (osprey_deflate_table.libdeflate_free_compressor)
#define libdeflate_free_decompressor (osprey_deflate_table.libdeflate_free_decompressor)
#define libdeflate_zlib_compress (osprey_deflate_table.libdeflate_zlib_compress)
#define libdeflate_zlib_compress_bound (osprey_deflate_table.libdeflate_zlib_compress_bound)
#define libdeflate_zlib_decompress (osprey_deflate_table.libdeflate_zlib_decompress)
#define libdeflate_zlib_decompress_ex (osprey_deflate_table.libdeflate_zlib_decompress_ex)


#define liq_attr_create (osprey_imagequant_table.liq_attr_create)
#define liq_attr_destroy (osprey_imagequant_table.liq_attr_destroy)
#define liq_get_palette (osprey_imagequant_table.liq_get_palette)
#define liq_image_create_rgba (osprey_imagequant_table.liq_image_create_rgba)
#define liq_image_destroy (osprey_imagequant_table.liq_image_destroy)
#define liq_image_quantize (osprey_imagequant_table.liq_image_quantize)
#define liq_result_destroy (osprey_imagequant_table.liq_result_destroy)
#define liq_set_dithering_level (osprey_imagequant_table.liq_set_dithering_level)
#define liq_set_quality (osprey_imagequant_table.liq_set_quality)
#define liq_set_speed (osprey_imagequant_table.liq_set_speed)
#define liq_version (osprey_imagequant_table.liq_version)
#define liq_write_remapped_image (osprey_imagequant_table.liq_write_remapped_image)

#endif
