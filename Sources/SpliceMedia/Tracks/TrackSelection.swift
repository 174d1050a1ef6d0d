/// Which audio tracks an output carries (`--audio-tracks`). Tracks are numbered as `splice probe`
/// prints them (`#1`: the container's stream index); languages are ISO 639-2 codes as the
/// container tags them ("eng", "fra").
public enum AudioTrackSelection: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Every audio track (the default).
    case all
    /// No audio.
    case none
    /// These tracks, in this order.
    case tracks([Int])
    /// Every audio track tagged with one of these languages, in container order.
    case languages([String])

    /// Parses `all`, `none`, `1,3` or `eng,fra`; nil for anything else.
    public init?(parsing text: String) {
        let lowered = text.lowercased()
        switch lowered {
        case "all": self = .all
        case "none": self = .none
        default:
            let parts = lowered.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
            let numbers = parts.compactMap { Int($0) }
            if numbers.count == parts.count {
                guard numbers.allSatisfy({ $0 >= 0 }) else { return nil }
                self = .tracks(numbers)
            } else if parts.allSatisfy({ $0.count >= 2 && $0.count <= 3 && $0.allSatisfy { $0.isLetter && $0.isASCII } }) {
                self = .languages(parts)
            } else {
                return nil
            }
        }
    }

    public var description: String {
        switch self {
        case .all: "all"
        case .none: "none"
        case .tracks(let ids): ids.map(String.init).joined(separator: ",")
        case .languages(let codes): codes.joined(separator: ",")
        }
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = AudioTrackSelection(parsing: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "not an audio track selection: \(text)"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// The audio tracks of `asset` this selects, in output order. Throws ``SettingsError`` for a
    /// number that is not an audio track of the asset, or languages no track has.
    func select(from asset: Asset) throws(SettingsError) -> [Track] {
        let audio = asset.tracks.filter { $0.kind == .audio }
        switch self {
        case .all: return audio
        case .none: return []
        case .tracks(let ids):
            var chosen: [Track] = []
            for id in ids {
                guard let track = audio.first(where: { $0.id == id }) else {
                    let have = audio.map { "#\($0.id)" }.joined(separator: ", ")
                    throw SettingsError(field: "audio-tracks", value: "\(id)",
                                        allowed: "an audio track of '\(asset.location)' (\(have.isEmpty ? "it has none" : have))")
                }
                if !chosen.contains(where: { $0.id == id }) { chosen.append(track) }
            }
            return chosen
        case .languages(let codes):
            let chosen = audio.filter { t in codes.contains { $0 == t.language?.lowercased() } }
            guard !chosen.isEmpty || audio.isEmpty else {
                let have = Set(audio.compactMap(\.language)).sorted().joined(separator: ", ")
                throw SettingsError(field: "audio-tracks", value: description,
                                    allowed: "languages of audio tracks of '\(asset.location)' (\(have.isEmpty ? "none is tagged" : have))")
            }
            return chosen
        }
    }
}

/// What happens to subtitle or data tracks (`--subtitles`, `--data-tracks`): carried over
/// (converted where the container needs it) or left out.
public enum TrackPolicy: String, Sendable, Codable, Hashable, CaseIterable, CustomStringConvertible {
    case copy, none
    public var description: String { rawValue }
}
