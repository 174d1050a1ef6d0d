import Foundation

/// A rendition as the manifests describe it.
struct ManifestRendition: Sendable {
    enum Kind: Sendable { case video, audio }
    var kind: Kind
    /// Folder beside the manifests (also the DASH Representation id).
    var folder: String
    var written: WrittenRendition
    /// RFC 6381 codec string (`avc1.64001f`, `mp4a.40.2`).
    var codecs: String
    /// Audio: the language (ISO 639-2) and a name for people.
    var language: String?
    var name: String?
    var isDefault = false
}

/// The text of HLS playlists (RFC 8216) over CMAF segments.
enum HLSPlaylist {
    /// The media playlist inside a rendition's folder: VOD, independent segments, the init
    /// segment as EXT-X-MAP, a target duration no EXTINF exceeds once rounded (RFC 8216 4.3.3.1).
    static func media(_ rendition: WrittenRendition) -> String {
        let target = targetDuration(rendition)
        var lines = ["#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-TARGETDURATION:\(target)", "#EXT-X-MEDIA-SEQUENCE:0",
                     "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-MAP:URI=\"init.mp4\""]
        for segment in rendition.segments {
            lines.append("#EXTINF:\(decimal(segment.duration, rendition.timescale, places: 6)),")
            lines.append(segment.name)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The largest segment duration rounded to the nearest second (at least 1).
    static func targetDuration(_ rendition: WrittenRendition) -> Int64 {
        let ts = Int64(rendition.timescale)
        return max(1, rendition.segments.map { ($0.duration * 2 + ts) / (2 * ts) }.max() ?? 1)
    }

    /// The master playlist: one audio group (one rendition per audio track, with LANGUAGE and
    /// NAME), and per video rung BANDWIDTH (the peak segment bit rate measured as RFC 8216 defines it,
    /// ``WrittenRendition/peakBitrate``, audio's added),
    /// AVERAGE-BANDWIDTH, CODECS, RESOLUTION and FRAME-RATE.
    static func master(videos: [ManifestRendition], audios: [ManifestRendition]) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-INDEPENDENT-SEGMENTS"]
        let group = "audio"
        for audio in audios {
            var attributes = ["TYPE=AUDIO", "GROUP-ID=\"\(group)\""]
            if let language = audio.language { attributes.append("LANGUAGE=\"\(quoted(language))\"") }
            attributes.append("NAME=\"\(quoted(audio.name ?? audio.folder))\"")
            attributes.append("DEFAULT=\(audio.isDefault ? "YES" : "NO")")
            attributes.append("AUTOSELECT=YES")
            attributes.append("CHANNELS=\"\(audio.written.reference.channels)\"")
            attributes.append("URI=\"\(audio.folder)/index.m3u8\"")
            lines.append("#EXT-X-MEDIA:" + attributes.joined(separator: ","))
        }
        let audioPeak = audios.map(\.written.peakBitrate).max() ?? 0
        let audioAverage = audios.map(\.written.averageBitrate).max() ?? 0
        let audioCodecs = Array(Set(audios.map(\.codecs))).sorted()
        for video in videos {
            let reference = video.written.reference
            var attributes = ["BANDWIDTH=\(video.written.peakBitrate + audioPeak)",
                              "AVERAGE-BANDWIDTH=\(video.written.averageBitrate + audioAverage)",
                              "CODECS=\"\(([video.codecs] + audioCodecs).joined(separator: ","))\"",
                              "RESOLUTION=\(reference.width)x\(reference.height)"]
            if let rate = reference.frameRate, rate.denominator > 0 {
                attributes.append("FRAME-RATE=\(decimal(Int64(rate.numerator), Int32(rate.denominator), places: 3))")
            }
            if !audios.isEmpty { attributes.append("AUDIO=\"\(group)\"") }
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append("\(video.folder)/index.m3u8")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "'").replacingOccurrences(of: "\n", with: " ")
    }
}

/// The text of a DASH manifest (static, ISO BMFF live profile) over the same CMAF segments: one
/// AdaptationSet for the video rungs and one per audio track (a language each), every
/// Representation with a SegmentTemplate and a SegmentTimeline of exact durations in its own
/// timescale. presentationTimeOffset is the media time of presentation zero — the same offset as
/// the init segment's edit list (the audio priming; the video's B-frame delay).
enum DASHManifest {
    /// `@minBufferTime`: what each Representation's `@bandwidth` is reckoned with
    /// (``WrittenRendition/deliveryBitrate``).
    static let minBufferSeconds: Int64 = 2

    static func make(videos: [ManifestRendition], audios: [ManifestRendition]) -> String {
        let duration = (videos + audios).map { r in
            r.written.segments.reduce(Int64(0)) { $0 + $1.duration } * 1000 / Int64(r.written.timescale)
        }.max() ?? 0
        var xml = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
                   "<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" profiles=\"urn:mpeg:dash:profile:isoff-live:2011\" "
                   + "type=\"static\" mediaPresentationDuration=\"PT\(decimal(duration, 1000, places: 3))S\" "
                   + "minBufferTime=\"PT\(minBufferSeconds)S\">",
                   "  <Period id=\"0\" start=\"PT0S\">"]
        var set = 0
        if !videos.isEmpty {
            let largest = videos.map { $0.written.reference }.max { $0.width * $0.height < $1.width * $1.height }!
            xml.append("    <AdaptationSet id=\"\(set)\" contentType=\"video\" mimeType=\"video/mp4\" segmentAlignment=\"true\" "
                       + "startWithSAP=\"1\" maxWidth=\"\(largest.width)\" maxHeight=\"\(largest.height)\">")
            for video in videos {
                let r = video.written.reference
                var attributes = "id=\"\(video.folder)\" codecs=\"\(video.codecs)\" bandwidth=\"\(video.written.deliveryBitrate)\" "
                    + "width=\"\(r.width)\" height=\"\(r.height)\" sar=\"1:1\""
                if let rate = r.frameRate { attributes += " frameRate=\"\(rate.numerator)/\(rate.denominator)\"" }
                xml.append("      <Representation \(attributes)>")
                xml += template(video.written, indent: "        ")
                xml.append("      </Representation>")
            }
            xml.append("    </AdaptationSet>")
            set += 1
        }
        for audio in audios {
            let lang = audio.language.map { " lang=\"\($0)\"" } ?? ""
            xml.append("    <AdaptationSet id=\"\(set)\" contentType=\"audio\" mimeType=\"audio/mp4\"\(lang) "
                       + "segmentAlignment=\"true\" startWithSAP=\"1\">")
            if let name = audio.name { xml.append("      <Label>\(escaped(name))</Label>") }
            let r = audio.written.reference
            xml.append("      <Representation id=\"\(audio.folder)\" codecs=\"\(audio.codecs)\" "
                       + "bandwidth=\"\(audio.written.deliveryBitrate)\" audioSamplingRate=\"\(r.sampleRate)\">")
            xml.append("        <AudioChannelConfiguration schemeIdUri=\"urn:mpeg:dash:23003:3:audio_channel_configuration:2011\" "
                       + "value=\"\(r.channels)\"/>")
            xml += template(audio.written, indent: "        ")
            xml.append("      </Representation>")
            xml.append("    </AdaptationSet>")
            set += 1
        }
        xml += ["  </Period>", "</MPD>"]
        return xml.joined(separator: "\n") + "\n"
    }

    /// SegmentTemplate with a SegmentTimeline; runs of equal durations folded with `r`.
    private static func template(_ rendition: WrittenRendition, indent: String) -> [String] {
        var lines = ["\(indent)<SegmentTemplate timescale=\"\(rendition.timescale)\" "
                     + "presentationTimeOffset=\"\(rendition.presentationOffset)\" "
                     + "initialization=\"$RepresentationID$/init.mp4\" media=\"$RepresentationID$/seg-$Number%05d$.m4s\" "
                     + "startNumber=\"1\">", "\(indent)  <SegmentTimeline>"]
        var runs: [(t: Int64, d: Int64, r: Int)] = []
        for segment in rendition.segments {
            if let last = runs.last, last.d == segment.mediaDuration,
               last.t + last.d * Int64(last.r + 1) == segment.mediaStart {
                runs[runs.count - 1].r += 1
            } else {
                runs.append((segment.mediaStart, segment.mediaDuration, 0))
            }
        }
        for run in runs {
            lines.append("\(indent)    <S t=\"\(run.t)\" d=\"\(run.d)\"" + (run.r > 0 ? " r=\"\(run.r)\"/>" : "/>"))
        }
        lines += ["\(indent)  </SegmentTimeline>", "\(indent)</SegmentTemplate>"]
        return lines
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// `value / timescale` in decimal with `places` digits, by integer arithmetic (rounded to nearest).
func decimal(_ value: Int64, _ timescale: Int32, places: Int) -> String {
    var unit: Int64 = 1
    for _ in 0..<places { unit *= 10 }
    let scaled = MediaTime.rescale(value, multiplier: unit, divisor: Int64(timescale), rounding: .nearest)
    let whole = scaled / unit, fraction = scaled % unit
    let digits = String(fraction)
    return "\(whole)." + String(repeating: "0", count: places - digits.count) + digits
}

/// RFC 6381 codec strings from a stream's parameters: `avc1.PPCCLL` from the SPS (avcC or
/// Annex B extradata), `mp4a.40.N` from the AAC profile.
enum CodecString {
    static func of(_ p: CodecParameters) -> String? {
        switch p.codecName {
        case "h264":
            let bytes = [UInt8](p.extradata)
            var sps: ArraySlice<UInt8>?
            if bytes.first == 1, bytes.count >= 4 {
                sps = bytes[1..<4]
            } else {
                // Annex B: the byte after an SPS NAL header (type 7).
                var i = 0
                while i + 4 < bytes.count {
                    if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1, bytes[i + 3] & 0x1f == 7, i + 7 <= bytes.count {
                        sps = bytes[(i + 4)..<(i + 7)]
                        break
                    }
                    i += 1
                }
            }
            guard let sps else { return nil }
            return "avc1." + sps.map { String(format: "%02x", $0) }.joined()
        case "aac":
            return "mp4a.40.\(max(1, p.profile + 1))"
        default:
            return nil
        }
    }
}
