import Foundation

/// BlurHash encoder (the published algorithm by Wolt: a DCT of the image in linear light, the DC
/// term as 24-bit sRGB and the AC terms quantised to 19 levels per channel, all in base 83).
public enum BlurHash {
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")

    /// Encodes interleaved 8-bit sRGB pixels (3 bytes per pixel, row by row).
    /// - Returns: `4 + 2·componentsX·componentsY` characters, or nil if the input is inconsistent.
    public static func encode(
        rgb pixels: [UInt8], width: Int, height: Int, componentsX: Int = 4, componentsY: Int = 3
    ) -> String? {
        guard (1...9).contains(componentsX), (1...9).contains(componentsY), width > 0, height > 0,
            pixels.count == width * height * 3
        else { return nil }

        let linear = (0...255).map { sRGBToLinear(UInt8($0)) }
        var factors: [(Double, Double, Double)] = []
        factors.reserveCapacity(componentsX * componentsY)
        for j in 0..<componentsY {
            for i in 0..<componentsX {
                let normalisation: Double = (i == 0 && j == 0) ? 1 : 2
                let cosX = (0..<width).map { cos(Double.pi * Double(i) * Double($0) / Double(width)) }
                var r = 0.0
                var g = 0.0
                var b = 0.0
                for y in 0..<height {
                    let cosY = cos(Double.pi * Double(j) * Double(y) / Double(height))
                    for x in 0..<width {
                        let basis = normalisation * cosX[x] * cosY
                        let offset = (y * width + x) * 3
                        r += basis * linear[Int(pixels[offset])]
                        g += basis * linear[Int(pixels[offset + 1])]
                        b += basis * linear[Int(pixels[offset + 2])]
                    }
                }
                let scale = 1 / Double(width * height)
                factors.append((r * scale, g * scale, b * scale))
            }
        }

        var hash = base83((componentsX - 1) + (componentsY - 1) * 9, length: 1)
        let ac = factors.dropFirst()
        var maximumValue = 1.0
        if ac.isEmpty {
            hash += base83(0, length: 1)
        } else {
            let actualMaximum = ac.map { max(abs($0.0), abs($0.1), abs($0.2)) }.max() ?? 0
            let quantised = Int(max(0, min(82, (actualMaximum * 166 - 0.5).rounded(.down))))
            maximumValue = Double(quantised + 1) / 166
            hash += base83(quantised, length: 1)
        }
        let dc = factors[0]
        hash += base83(linearToSRGB(dc.0) << 16 | linearToSRGB(dc.1) << 8 | linearToSRGB(dc.2), length: 4)
        for factor in ac {
            func quantise(_ value: Double) -> Int {
                Int(max(0, min(18, (signedPow(value / maximumValue, 0.5) * 9 + 9.5).rounded(.down))))
            }
            hash += base83(quantise(factor.0) * 19 * 19 + quantise(factor.1) * 19 + quantise(factor.2), length: 2)
        }
        return hash
    }

    static func base83(_ value: Int, length: Int) -> String {
        var result = ""
        var divisor = 1
        for _ in 1..<max(length, 1) { divisor *= 83 }
        for _ in 0..<length {
            result.append(alphabet[(value / divisor) % 83])
            divisor /= 83
        }
        return result
    }

    static func sRGBToLinear(_ value: UInt8) -> Double {
        let v = Double(value) / 255
        return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
    }

    static func linearToSRGB(_ value: Double) -> Int {
        let v = max(0, min(1, value))
        return v <= 0.003_130_8 ? Int(v * 12.92 * 255 + 0.5) : Int((1.055 * pow(v, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    static func signedPow(_ value: Double, _ exponent: Double) -> Double {
        (value < 0 ? -1 : 1) * pow(abs(value), exponent)
    }
}
