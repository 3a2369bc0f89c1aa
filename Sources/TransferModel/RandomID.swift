import Reactor

/// Identifiers: 20 characters of `[a-z0-9]` — the creation time in milliseconds (9 characters of
/// base 36, good until the year 5138) followed by 11 random characters (about 57 bits), so that
/// uniqueness need not be checked: two ids collide only if made in the same millisecond with the
/// same random part. Time comes first because ids are index keys (tasks by session and id, events
/// by id): keys that grow are appended at an index's end, while random keys rewrote pages all
/// over an index that grows with every task, and each of those pages went to the WAL again at
/// every commit. Ids are names, not secrets (secrets use the system generator directly).
///
/// The random part is drawn from xoshiro256** seeded once from the system generator: the system
/// generator makes a getrandom(2) call per number, which showed up in profiles at thousands of ids
/// a second.
package enum RandomID {
    /// Base-36 digits in ASCII order, so that ids sort as their times do.
    private static let digits = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)
    fileprivate static let state = Locked(Xoshiro256StarStar())
    package static let timeDigits = 9
    package static let randomDigits = 11

    package static func make(at time: Timestamp = .now()) -> String {
        var out = [UInt8](repeating: 0, count: timeDigits + randomDigits)
        writeTime(time, into: &out)
        state.withLock { generator in
            var bits: UInt64 = 0
            var left = 0
            for i in timeDigits..<out.count {
                // 6 bits give 0...63; values over 35 are drawn again, so every character is
                // equally likely.
                var v = 64
                while v >= digits.count {
                    if left < 6 { bits = generator.next(); left = 64 }
                    v = Int(bits & 63)
                    bits >>= 6
                    left -= 6
                }
                out[i] = digits[v]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The id made at `time` with the random part `random` (as one of these ids has it).
    package static func make(at time: Timestamp, random: String) -> String {
        var out = [UInt8](repeating: 0, count: timeDigits)
        writeTime(time, into: &out)
        out += random.utf8
        return String(decoding: out, as: UTF8.self)
    }

    private static func writeTime(_ time: Timestamp, into out: inout [UInt8]) {
        var millis = UInt64(max(0, time.milliseconds))
        for i in (0..<timeDigits).reversed() {
            out[i] = digits[Int(millis % 36)]
            millis /= 36
        }
    }

    /// The creation time of an id made by `make(at:)`, when `id` has the form of one.
    package static func time<S: Collection<UInt8>>(of id: S) -> Timestamp? {
        guard id.count == timeDigits + randomDigits else { return nil }
        var millis: Int64 = 0
        for (i, c) in id.enumerated() {
            guard let v = digitValues[Int(c)] else { return nil }
            if i < timeDigits { millis = millis * 36 + Int64(v) }
        }
        return Timestamp(milliseconds: millis)
    }

    private static let digitValues: [Int?] = (0..<256).map { c in digits.firstIndex(of: UInt8(c)) }
}

/// Numbers that need no secrecy (a retry's jitter) drawn from the ids' generator: the system one
/// makes a getrandom(2) call for each, once a task when every ended transfer draws its jitter.
package struct SharedRandom: RandomNumberGenerator {
    package init() {}

    package mutating func next() -> UInt64 { RandomID.state.withLock { $0.next() } }
}

struct Xoshiro256StarStar: RandomNumberGenerator {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    package init() {
        var system = SystemRandomNumberGenerator()
        s = (system.next(), system.next(), system.next(), system.next())
    }

    mutating func next() -> UInt64 {
        let result = rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotl(s.3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
}
