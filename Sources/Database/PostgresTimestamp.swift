import Foundation

/// `timestamptz` text conversion without DateFormatter: fixed ISO layout, UTC, microseconds.
///
/// Writing: `YYYY-MM-DD HH:MM:SS.ffffff+00`. Reading: the server's ISO DateStyle output (the session sets
/// `DateStyle=ISO` and `TimeZone=UTC`), any UTC offset `±HH[:MM[:SS]]`, an optional fraction, and a date
/// without time. `timestamp without time zone` values are read as UTC. Years before 1 AD and ±infinity are
/// rejected.
enum PostgresTimestamp {
    static func format(_ date: Date) -> String {
        let totalMicros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        let micros = Int64(totalMicros)
        let (days, microsOfDay) = floorDivide(micros, 86_400_000_000)
        let (year, month, day) = civil(fromDays: days)
        let seconds = microsOfDay / 1_000_000
        let fraction = microsOfDay % 1_000_000
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + " "
            + pad(seconds / 3600, 2) + ":" + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
            + "." + pad(fraction, 6) + "+00"
    }

    static func parse(_ text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.number(minDigits: 4, maxDigits: 7), scanner.consume("-"),
            let month = scanner.number(minDigits: 2, maxDigits: 2), scanner.consume("-"),
            let day = scanner.number(minDigits: 2, maxDigits: 2),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var micros: Int64 = 0
        var offsetSeconds: Int64 = 0
        if scanner.consume(" ") || scanner.consume("T") {
            guard let hour = scanner.number(minDigits: 2, maxDigits: 2), scanner.consume(":"),
                let minute = scanner.number(minDigits: 2, maxDigits: 2), scanner.consume(":"),
                let second = scanner.number(minDigits: 2, maxDigits: 2),
                hour <= 24, minute < 60, second < 61
            else { return nil }
            micros = (hour * 3600 + minute * 60 + second) * 1_000_000
            if scanner.consume(".") {
                guard let (digits, count) = scanner.digits(maxDigits: 9), count > 0 else { return nil }
                var scaled = digits
                if count < 6 {
                    for _ in count..<6 { scaled *= 10 }
                } else {
                    for _ in 6..<count { scaled /= 10 }
                }
                micros += scaled
            }
            if let sign = scanner.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                scanner.advance()
                guard let hours = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
                var offset = hours * 3600
                if scanner.consume(":") {
                    guard let minutes = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
                    offset += minutes * 60
                    if scanner.consume(":") {
                        guard let seconds = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
                        offset += seconds
                    }
                }
                offsetSeconds = sign == UInt8(ascii: "-") ? -offset : offset
            } else if scanner.consume("Z") {
                offsetSeconds = 0
            }
        }
        guard scanner.isAtEnd, year >= 1 else { return nil }
        let days = self.days(fromCivil: year, month, day)
        let utcMicros = days * 86_400_000_000 + micros - offsetSeconds * 1_000_000
        return Date(timeIntervalSince1970: Double(utcMicros) / 1_000_000)
    }

    // Days since 1970-01-01 in the proleptic Gregorian calendar (the algorithm of H. Hinnant's date papers).
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        var (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        if remainder < 0 {
            quotient -= 1
            remainder += divisor
        }
        return (quotient, remainder)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { index == bytes.count }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func advance() { index += 1 }

        mutating func consume(_ character: Unicode.Scalar) -> Bool {
            guard peek() == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        mutating func digits(maxDigits: Int) -> (Int64, Int)? {
            var value: Int64 = 0
            var count = 0
            while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                if count < maxDigits { value = value * 10 + Int64(byte - UInt8(ascii: "0")) }
                count += 1
                index += 1
            }
            return (value, min(count, maxDigits))
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
            let start = index
            guard let (value, _) = digits(maxDigits: maxDigits) else { return nil }
            let count = index - start
            return count >= minDigits && count <= maxDigits ? value : nil
        }
    }
}
