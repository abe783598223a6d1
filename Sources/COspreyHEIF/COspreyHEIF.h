// libheif (Debian's libheif-dev 1.15: libde265 decodes HEVC). Osprey hands it HEIC/HEIF only, never AVIF, and only
// after its own structure checks (HEIFStructure.swift).
#include <libheif/heif.h>
