// libjpeg-turbo: the libjpeg API (jpeglib.h) for scaled, incremental and marker-level work, and the TurboJPEG API
// (turbojpeg.h) for the one-call paths. jpeglib.h needs FILE and size_t declared before it.
#include <stddef.h>
#include <stdio.h>
#include <jpeglib.h>
#include <jerror.h>
#include <turbojpeg.h>
