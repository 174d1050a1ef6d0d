// The FFmpeg headers Splice uses. Only includes: macros Swift cannot import live in CFFmpegShims.
#ifndef SPLICE_CFFMPEG_SHIM_H
#define SPLICE_CFFMPEG_SHIM_H
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavcodec/vorbis_parser.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/mathematics.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libavutil/timecode.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/md5.h>
#include <libavutil/hash.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>
#endif
