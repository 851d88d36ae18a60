// Non-variadic wrappers around the libvips operations avatar-cropper calls.
#pragma once
#include <vips/vips.h>
