import Foundation
import Testing

@testable import Database

@Suite struct PostgresValueEncodingTests {
    @Test func typesAndTexts() throws {
        let uuid = UUID(uuidString: "8D3F9C2A-1B4E-4C5D-9E6F-7A8B9C0D1E2F")!
        #expect(try PostgresValue.text("it's; --").encoded() == EncodedParameter(oid: 25, text: "it's; --"))
        #expect(try PostgresValue.text("").encoded() == EncodedParameter(oid: 25, text: ""))
        #expect(try PostgresValue.int(-42).encoded() == EncodedParameter(oid: 20, text: "-42"))
        #expect(try PostgresValue.int(.max).encoded() == EncodedParameter(oid: 20, text: "9223372036854775807"))
        #expect(try PostgresValue.bool(true).encoded() == EncodedParameter(oid: 16, text: "true"))
        #expect(try PostgresValue.bool(false).encoded() == EncodedParameter(oid: 16, text: "false"))
        #expect(try PostgresValue.bytes([0, 0x1f, 0xff]).encoded() == EncodedParameter(oid: 17, text: "\\x001fff"))
        #expect(try PostgresValue.bytes([]).encoded() == EncodedParameter(oid: 17, text: "\\x"))
        #expect(
            try PostgresValue.uuid(uuid).encoded()
                == EncodedParameter(oid: 2950, text: "8d3f9c2a-1b4e-4c5d-9e6f-7a8b9c0d1e2f")
        )
        #expect(try PostgresValue.null.encoded() == EncodedParameter(oid: 0, text: nil))
    }

    @Test func doubles() throws {
        #expect(try PostgresValue.double(1.5).encoded() == EncodedParameter(oid: 701, text: "1.5"))
        #expect(try PostgresValue.double(0.1).encoded().text == "0.1")
        #expect(try PostgresValue.double(1e-300).encoded().text.flatMap(Double.init) == 1e-300)
        #expect(try PostgresValue.double(.nan).encoded().text == "NaN")
        #expect(try PostgresValue.double(.infinity).encoded().text == "Infinity")
        #expect(try PostgresValue.double(-.infinity).encoded().text == "-Infinity")
    }

    @Test func textWithNULIsRejectedBeforeSending() {
        #expect {
            try PostgresValue.text("a\u{0}b").encoded()
        } throws: { error in
            (error as? DatabaseError)?.code == .invalidParameter
        }
    }

    @Test func timestampFormatting() throws {
        #expect(
            try PostgresValue.timestamp(Date(timeIntervalSince1970: 0)).encoded()
                == EncodedParameter(oid: 1184, text: "1970-01-01 00:00:00.000000+00"))
        #expect(
            PostgresTimestamp.format(Date(timeIntervalSince1970: 1_700_000_000.5)) == "2023-11-14 22:13:20.500000+00"
        )
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: -1.25)) == "1969-12-31 23:59:58.750000+00")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29 00:00:00.000000+00")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 0.000_001)) == "1970-01-01 00:00:00.000001+00")
    }

    @Test func timestampParsing() throws {
        func parse(_ text: String) -> TimeInterval? { PostgresTimestamp.parse(text)?.timeIntervalSince1970 }
        #expect(parse("1970-01-01 00:00:00+00") == 0)
        #expect(parse("2023-11-14 22:13:20.5+00") == 1_700_000_000.5)
        #expect(parse("2024-03-01 01:30:00+05:30") == parse("2024-02-29 20:00:00+00"))
        #expect(parse("2024-02-29 20:00:00-08") == parse("2024-03-01 04:00:00+00"))
        #expect(parse("1900-01-01 00:00:00+00:09:21") == parse("1899-12-31 23:50:39+00"))
        #expect(parse("2024-02-29 20:00:00") == parse("2024-02-29 20:00:00+00"))
        #expect(parse("2024-02-29") == parse("2024-02-29 00:00:00+00"))
        #expect(parse("2024-02-29T20:00:00Z") == parse("2024-02-29 20:00:00+00"))
        #expect(parse("infinity") == nil)
        #expect(parse("0044-03-15 00:00:00+00 BC") == nil)
        #expect(parse("2024-13-01 00:00:00+00") == nil)
        #expect(parse("2024-02-29 20:00") == nil)
    }

    @Test func timestampRoundTripsAtMicrosecondPrecision() throws {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            // Whole microseconds between about year 1000 and 3000.
            let micros = Int64(state >> 8) % 63_000_000_000_000_000 - 30_600_000_000_000_000
            let date = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
            let text = PostgresTimestamp.format(date)
            let parsed = try #require(PostgresTimestamp.parse(text), "\(text)")
            #expect(abs(parsed.timeIntervalSince1970 - date.timeIntervalSince1970) < 1e-6, "\(text)")
        }
    }

    @Test func civilDaysMatchKnownDates() {
        #expect(PostgresTimestamp.days(fromCivil: 1970, 1, 1) == 0)
        #expect(PostgresTimestamp.days(fromCivil: 2000, 3, 1) == 11017)
        #expect(PostgresTimestamp.days(fromCivil: 1, 1, 1) == -719_162)
        #expect(PostgresTimestamp.civil(fromDays: -719_162) == (1, 1, 1))
        #expect(PostgresTimestamp.civil(fromDays: 19782) == (2024, 2, 29))
    }

    @Test func byteaHexDecoding() {
        #expect(PostgresRow.decodeHex("\\x00ff7F") == [0, 255, 127])
        #expect(PostgresRow.decodeHex("\\x") == [])
        #expect(PostgresRow.decodeHex("\\x0") == nil)
        #expect(PostgresRow.decodeHex("00ff") == nil)
        #expect(PostgresRow.decodeHex("\\xzz") == nil)
    }
}
