#!/usr/bin/env python3
"""Plays a Splice streaming package in headless Chromium and checks that playback advances.

    Deploy/play-package.py [--splice PATH] [--package OUT.m3u8] [--seconds N]

Without --package it makes one: a generated clip (ffmpeg's testsrc2 + a tone) through
`splice transcode CLIP OUT.m3u8 --dash` with a two-rung ladder and 2 s segments. It then serves
the package's folder on a loopback port (Python's http.server) and opens a small page in
`chromium --headless` that plays it with Media Source Extensions, the way hls.js and dash.js do
(neither is available offline): it reads the master playlist, asks MediaSource.isTypeSupported
for each rung's CODECS, appends the first rung's and the audio rendition's init.mp4 and every
.m4s (the CMAF segments the HLS playlists and the DASH manifest share) into two SourceBuffers,
plays muted, and waits until video.currentTime passes most of the clip. The page posts what it
saw back to the server; this script prints it and exits 0 when playback advanced (1 when it did
not, 2 when Chromium or ffmpeg is missing).

Needs the Debian `chromium` package (`apt-get install -y chromium`) and ffmpeg.
"""
import argparse
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

PAGE = r"""<!doctype html>
<html><body><video id="v" muted playsinline></video><script>
const report = (r) => fetch('/result', {method: 'POST', body: JSON.stringify(r)});
const text = async (u) => { const r = await fetch(u); if (!r.ok) throw new Error(u + ' ' + r.status); return r.text(); };
const bytes = async (u) => { const r = await fetch(u); if (!r.ok) throw new Error(u + ' ' + r.status); return r.arrayBuffer(); };
const attrs = (line) => Object.fromEntries([...line.matchAll(/([A-Z-]+)=("[^"]*"|[^,]*)/g)].map(m => [m[1], m[2].replace(/"/g, '')]));
const dir = (u) => u.includes('/') ? u.slice(0, u.lastIndexOf('/') + 1) : '';
async function media(uri) {
  const lines = (await text(uri)).split('\n');
  const map = lines.find(l => l.startsWith('#EXT-X-MAP:'));
  const segs = lines.filter(l => l && !l.startsWith('#'));
  return [attrs(map).URI, ...segs].map(s => dir(uri) + s);
}
function append(sb, data) {
  return new Promise((ok, fail) => {
    sb.addEventListener('updateend', ok, {once: true});
    sb.addEventListener('error', () => fail(new Error('SourceBuffer error')), {once: true});
    sb.appendBuffer(data);
  });
}
const ranges = (b) => Array.from({length: b.length}, (_, i) => [b.start(i), b.end(i)]);
(async () => {
  const r = {userAgent: navigator.userAgent};
  try {
    const master = (await text(MASTER)).split('\n');
    const variants = master.map((l, i) => [l, master[i + 1]]).filter(([l]) => l.startsWith('#EXT-X-STREAM-INF:'))
      .map(([l, uri]) => ({...attrs(l), uri: dir(MASTER) + uri}));
    const audio = attrs(master.find(l => l.startsWith('#EXT-X-MEDIA:TYPE=AUDIO')));
    r.variants = variants.map(v => ({uri: v.uri, codecs: v.CODECS,
      supported: MediaSource.isTypeSupported('video/mp4; codecs="' + v.CODECS.split(',')[0] + '"')}));
    const videoType = 'video/mp4; codecs="' + variants[0].CODECS.split(',')[0] + '"';
    const audioType = 'audio/mp4; codecs="' + variants[0].CODECS.split(',')[1] + '"';
    r.audioSupported = MediaSource.isTypeSupported(audioType);
    const v = document.getElementById('v');
    const ms = new MediaSource();
    v.src = URL.createObjectURL(ms);
    await new Promise(ok => ms.addEventListener('sourceopen', ok, {once: true}));
    const vsb = ms.addSourceBuffer(videoType), asb = ms.addSourceBuffer(audioType);
    const [vf, af] = [await media(variants[0].uri), await media(dir(MASTER) + audio.URI)];
    for (const u of vf) await append(vsb, await bytes(u));
    for (const u of af) await append(asb, await bytes(u));
    r.segmentsAppended = {video: vf.length - 1, audio: af.length - 1};
    ms.endOfStream();
    r.duration = v.duration;
    r.videoBuffered = ranges(vsb.buffered);
    r.audioBuffered = ranges(asb.buffered);
    await v.play();
    const want = Math.min(WANT, v.duration - 0.5);
    const started = performance.now();
    while (v.currentTime < want && !v.ended && performance.now() - started < 30000) {
      await new Promise(ok => setTimeout(ok, 100));
    }
    r.currentTime = v.currentTime;
    r.wallSeconds = (performance.now() - started) / 1000;
    r.ended = v.ended;
    r.decodedFrames = v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality().totalVideoFrames : null;
    r.droppedFrames = v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality().droppedVideoFrames : null;
    r.error = v.error ? v.error.message || String(v.error.code) : null;
    r.advanced = v.currentTime >= want;
  } catch (e) {
    r.error = String(e);
    r.advanced = false;
  }
  await report(r);
})();
</script></body></html>
"""


def make_package(splice, work, seconds):
    clip = os.path.join(work, "clip.mov")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size=640x360:rate=25:duration={seconds}",
                    "-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=48000:duration={seconds}",
                    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le", clip], check=True)
    master = os.path.join(work, "show.m3u8")
    subprocess.run([splice, "transcode", clip, master, "--dash", "--ladder", "640x360@800k,320x180@200k",
                    "--hls-segment-seconds", "2", "--preset", "ultrafast", "--jobs", "2"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return master


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splice", default=shutil.which("splice") or ".build/release/splice")
    parser.add_argument("--package", help="an existing package's master playlist (OUT.m3u8)")
    parser.add_argument("--seconds", type=int, default=8, help="length of the generated clip")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium or not shutil.which("ffmpeg"):
        print("skipped: needs chromium (apt-get install -y chromium) and ffmpeg", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="splice-play-") as work:
        master = os.path.abspath(args.package) if args.package else make_package(args.splice, work, args.seconds)
        root = os.path.dirname(master)
        want = max(1.0, args.seconds * 0.75) if not args.package else 4.0
        page = PAGE.replace("MASTER", json.dumps(os.path.basename(master))).replace("WANT", str(want)).encode()
        result = {}
        done = threading.Event()

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=root, **k)

            def do_GET(self):
                if self.path == "/play.html":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(page)))
                    self.end_headers()
                    self.wfile.write(page)
                else:
                    super().do_GET()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                result.update(json.loads(body))
                self.send_response(204)
                self.end_headers()
                done.set()

            def log_message(self, *a):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/play.html"
        profile = os.path.join(work, "chromium-profile")
        browser = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--mute-audio",
                                    "--autoplay-policy=no-user-gesture-required", "--no-first-run",
                                    f"--user-data-dir={profile}", url],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            finished = done.wait(90)
        finally:
            browser.terminate()
            try:
                browser.wait(10)
            except subprocess.TimeoutExpired:
                browser.kill()
                browser.wait()
            server.shutdown()
        if not finished:
            print("no result from the page within 90 s", file=sys.stderr)
            return 1
        print(json.dumps(result, indent=2))
        return 0 if result.get("advanced") and all(v["supported"] for v in result.get("variants", [])) else 1


if __name__ == "__main__":
    sys.exit(main())
