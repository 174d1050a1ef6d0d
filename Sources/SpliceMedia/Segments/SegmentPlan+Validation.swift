extension SegmentPlan {
    /// Checks a plan that arrived from elsewhere (a worker's ASSIGN, a kept `plan.json`) before
    /// anything computes with it: settings valid, audio framing and positions within bounds that
    /// no arithmetic on them can overflow, at least one segment. Throws `MediaError` with code
    /// `invalidSettings` naming the first problem. Plans the planner makes always pass.
    public func validate() throws(MediaError) {
        func refuse(_ detail: String) -> MediaError {
            MediaError(.invalidSettings, "plan \(id) is not a usable segment plan: \(detail)")
        }
        do {
            try videoSettings?.validate()
            try audioSettings?.validate()
            try TimedAnnotation.validate(annotations)
        } catch {
            throw refuse("\(error)")
        }
        guard !segments.isEmpty else { throw refuse("it has no segments") }
        // 2^52 samples is 3,000 years at 48 kHz: far beyond any file, far from Int64's edge.
        let sampleBound: Int64 = 1 << 52
        for track in audioTracks {
            guard (0...Int(Int32.max)).contains(track.source), (-sampleBound...sampleBound).contains(track.firstSample),
                  (-sampleBound...sampleBound).contains(track.lead) else { throw refuse("an audio track is out of range") }
            if let framing = track.framing {
                guard (1...768_000).contains(framing.sampleRate), (1...65_536).contains(framing.samplesPerPacket),
                      (0...65_536).contains(framing.priming), (0...1_000_000).contains(framing.preRollPackets),
                      (0...4096).contains(framing.tailPackets)
                else { throw refuse("its audio framing is out of range") }
            }
        }
        for spec in segments {
            guard (0...Int(Int32.max)).contains(spec.index) else { throw refuse("segment index \(spec.index)") }
            // A warm-up is encoded work: a minute bounds it far above the planner's second.
            if let warmUp = spec.videoWarmUp, warmUp < .zero || warmUp > MediaTime(seconds: 60) || spec.isAudio {
                throw refuse("segment \(spec.index) has a rate-control warm-up of \(warmUp)")
            }
            guard let audio = spec.audio else { continue }
            guard framing(of: audio) != nil else {
                throw refuse("segment \(spec.index) has audio but its track \(audio.track) is not encoded")
            }
            let anchor = audio.anchor.map { [$0.position, $0.samples] } ?? []
            for position in [audio.encodeStart, audio.encodeEnd, audio.keepStart, audio.keepEnd].compactMap({ $0 }) + anchor
            where !(-sampleBound...sampleBound).contains(position) {
                throw refuse("segment \(spec.index) has an audio position of \(position) samples")
            }
        }
    }
}
