// aomenc.c: convsvc's glue between Go and libaom's AV1 encoder, compiled to WebAssembly by
// build.sh beside it. It codes one 8-bit still picture from YUV planes the host has already
// converted, with the settings libavif gives libaom for a single image (all-intra usage,
// constant quality, SSIM tuning, no post-processing filters), and returns the frame's OBUs;
// the host writes the AVIF container around them.

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aom/aom_encoder.h"
#include "aom/aomcx.h"

// Chroma layouts, libavif's avifPixelFormat values.
enum { CHROMA_400 = 0, CHROMA_444 = 1, CHROMA_422 = 2, CHROMA_420 = 3 };

// encode codes the width x height picture whose planes start at y, u and v (rows packed: the
// luma plane width bytes a row, the chroma planes their own width; u and v are ignored for
// 4:0:0). quantizer is libaom's 0..63 constant-quality level (0 with lossless set: lossless),
// speed libaom's cpu-used (clamped to 0..9), full_range and matrix the colour signalling written
// in the sequence header. It returns a malloc'd buffer of the coded OBUs (temporal unit with
// its sequence header) and sets *size, or returns NULL.
uint8_t *encode(uint8_t *y, uint8_t *u, uint8_t *v, int width, int height, int chroma,
                int quantizer, int speed, int lossless, int full_range, int matrix,
                size_t *size) {
    *size = 0;
    if (width <= 0 || height <= 0 || quantizer < 0 || quantizer > 63) {
        return NULL;
    }
    aom_img_fmt_t fmt;
    int profile, xs, ys;
    switch (chroma) {
    case CHROMA_444: fmt = AOM_IMG_FMT_I444; profile = 1; xs = 0; ys = 0; break;
    case CHROMA_422: fmt = AOM_IMG_FMT_I422; profile = 2; xs = 1; ys = 0; break;
    case CHROMA_420:
    case CHROMA_400: fmt = AOM_IMG_FMT_I420; profile = 0; xs = 1; ys = 1; break;
    default: return NULL;
    }

    aom_codec_iface_t *iface = aom_codec_av1_cx();
    struct aom_codec_enc_cfg cfg;
    if (aom_codec_enc_config_default(iface, &cfg, AOM_USAGE_ALL_INTRA) != AOM_CODEC_OK) {
        return NULL;
    }
    cfg.rc_end_usage = AOM_Q;
    cfg.g_profile = profile;
    cfg.g_bit_depth = AOM_BITS_8;
    cfg.g_input_bit_depth = 8;
    cfg.g_w = width;
    cfg.g_h = height;
    cfg.g_limit = 1; // one frame: still_picture and reduced_still_picture_header
    cfg.g_lag_in_frames = 0;
    cfg.kf_mode = AOM_KF_DISABLED;
    cfg.kf_max_dist = 0;
    cfg.g_threads = 1;
    cfg.rc_min_quantizer = 0;
    cfg.rc_max_quantizer = lossless ? 0 : 63;
    cfg.monochrome = chroma == CHROMA_400;

    aom_codec_ctx_t enc;
    if (aom_codec_enc_init(&enc, iface, &cfg, 0) != AOM_CODEC_OK) {
        return NULL;
    }
    if (speed < 0) speed = 0;
    if (speed > 9) speed = 9;
    int ok = aom_codec_control(&enc, AOME_SET_CPUUSED, speed) == AOM_CODEC_OK &&
             aom_codec_control(&enc, AV1E_SET_SKIP_POSTPROC_FILTERING, 1) == AOM_CODEC_OK &&
             aom_codec_control(&enc, AOME_SET_TUNING, AOM_TUNE_SSIM) == AOM_CODEC_OK &&
             aom_codec_control(&enc, AOME_SET_CQ_LEVEL, quantizer) == AOM_CODEC_OK &&
             aom_codec_control(&enc, AV1E_SET_COLOR_RANGE,
                               full_range ? AOM_CR_FULL_RANGE : AOM_CR_STUDIO_RANGE) == AOM_CODEC_OK &&
             aom_codec_control(&enc, AV1E_SET_COLOR_PRIMARIES, AOM_CICP_CP_UNSPECIFIED) == AOM_CODEC_OK &&
             aom_codec_control(&enc, AV1E_SET_TRANSFER_CHARACTERISTICS, AOM_CICP_TC_UNSPECIFIED) == AOM_CODEC_OK &&
             aom_codec_control(&enc, AV1E_SET_MATRIX_COEFFICIENTS, matrix) == AOM_CODEC_OK &&
             aom_codec_control(&enc, AV1E_SET_CHROMA_SAMPLE_POSITION, AOM_CSP_UNKNOWN) == AOM_CODEC_OK;
    if (ok && lossless) {
        ok = aom_codec_control(&enc, AV1E_SET_LOSSLESS, 1) == AOM_CODEC_OK;
    }

    // 4:0:0 still hands libaom 4:2:0 planes: a mid-grey chroma plane it does not code.
    uint8_t *grey = NULL;
    int cw = (width + xs) >> xs;
    int ch = (height + ys) >> ys;
    if (ok && chroma == CHROMA_400) {
        grey = malloc((size_t)cw * ch);
        if (grey == NULL) {
            ok = 0;
        } else {
            memset(grey, 128, (size_t)cw * ch);
            u = grey;
            v = grey;
        }
    }

    uint8_t *out = NULL;
    size_t n = 0;
    if (ok) {
        aom_image_t img;
        memset(&img, 0, sizeof(img));
        img.fmt = fmt;
        img.bit_depth = 8;
        img.w = img.d_w = width;
        img.h = img.d_h = height;
        img.x_chroma_shift = xs;
        img.y_chroma_shift = ys;
        img.bps = fmt == AOM_IMG_FMT_I444 ? 24 : fmt == AOM_IMG_FMT_I422 ? 16 : 12;
        img.range = full_range ? AOM_CR_FULL_RANGE : AOM_CR_STUDIO_RANGE;
        img.mc = matrix;
        img.cp = AOM_CICP_CP_UNSPECIFIED;
        img.tc = AOM_CICP_TC_UNSPECIFIED;
        img.monochrome = chroma == CHROMA_400;
        img.planes[0] = y;
        img.planes[1] = u;
        img.planes[2] = v;
        img.stride[0] = width;
        img.stride[1] = cw;
        img.stride[2] = cw;

        // Frame packets, then the flush's, appended to out.
        for (aom_image_t *frame = &img; ok; frame = NULL) {
            if (aom_codec_encode(&enc, frame, 0, 1, 0) != AOM_CODEC_OK) {
                ok = 0;
                break;
            }
            int got = 0;
            aom_codec_iter_t iter = NULL;
            const aom_codec_cx_pkt_t *pkt;
            while ((pkt = aom_codec_get_cx_data(&enc, &iter)) != NULL) {
                if (pkt->kind != AOM_CODEC_CX_FRAME_PKT) {
                    continue;
                }
                got = 1;
                uint8_t *grown = realloc(out, n + pkt->data.frame.sz);
                if (grown == NULL) {
                    ok = 0;
                    break;
                }
                out = grown;
                memcpy(out + n, pkt->data.frame.buf, pkt->data.frame.sz);
                n += pkt->data.frame.sz;
            }
            if (frame == NULL && !got) {
                break; // flushed
            }
        }
    }
    aom_codec_destroy(&enc);
    free(grey);
    if (!ok || n == 0) {
        free(out);
        return NULL;
    }
    *size = n;
    return out;
}
