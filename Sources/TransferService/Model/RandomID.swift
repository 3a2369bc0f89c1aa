import Reactor

/// Random identifiers: 20 characters of `[a-z0-9]` (about 103 bits), so uniqueness need not be
/// checked. Drawn from xoshiro256** seeded once from the system generator: the system generator
/// makes a getrandom(2) call per number, which showed up in profiles at thousands of ids a second.
/// Ids are names, not secrets (secrets use the system generator directly).
enum RandomID {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
    private static let state = Locked(Xoshiro256StarStar())

    static func make(length: Int = 20) -> String {
        var out = [UInt8](repeating: 0, count: length)
        state.withLock { generator in
            var bits: UInt64 = 0
            var left = 0
            for i in 0..<length {
                if left < 6 {
                    bits = generator.next()
                    left = 64
                }
                // 6 bits give 0...63; values over 35 are drawn again, so every character is
                // equally likely.
                var v = Int(bits & 63)
                bits >>= 6
                left -= 6
                while v >= alphabet.count {
                    if left < 6 { bits = generator.next(); left = 64 }
                    v = Int(bits & 63)
                    bits >>= 6
                    left -= 6
                }
                out[i] = alphabet[v]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

struct Xoshiro256StarStar: RandomNumberGenerator {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    init() {
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
