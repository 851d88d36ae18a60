import Foundation

/// Reading the times the replay tool deals with: DLQ headers and `--from` / `--to`.
public enum ReplayTime {
    /// An ISO 8601 date-time, with or without fractional seconds (`2025-01-31T09:30:00Z`,
    /// `2025-01-31T09:30:00.250+01:00`); nil when it is not one.
    public static func parseISO8601(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = try? Date(trimmed, strategy: .iso8601) { return date }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: trimmed)
    }

    /// A bound of a time range as an operator types it: an ISO 8601 date-time, a day
    /// (`2025-01-31`, midnight UTC), or an age relative to `now` (`90s`, `30m`, `2h`, `7d`).
    public static func parseBound(_ text: String, now: Date = Date()) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = parseISO8601(trimmed) { return date }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        if trimmed.count == 10, let date = day.date(from: trimmed) { return date }
        guard let unit = trimmed.last, let amount = Double(trimmed.dropLast()), amount >= 0, amount.isFinite
        else { return nil }
        let seconds: Double
        switch unit {
        case "s": seconds = amount
        case "m": seconds = amount * 60
        case "h": seconds = amount * 3600
        case "d": seconds = amount * 86400
        default: return nil
        }
        return now.addingTimeInterval(-seconds)
    }

    /// How the listing shows a time: ISO 8601 in UTC, whole seconds.
    public static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
