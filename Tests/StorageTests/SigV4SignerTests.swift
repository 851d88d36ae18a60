import Foundation
import Testing

@testable import Storage

/// The signer against AWS's published examples: the SigV4 test suite ("get-vanilla" and friends, service
/// "service", 2015-08-30), the signing-key derivation example (IAM), and the S3 header-auth examples
/// (examplebucket, 2013-05-24) from "Authenticating Requests: Using the Authorization Header".
@Suite struct SigV4SignerTests {
    static let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    // MARK: AWS SigV4 test suite (AKIDEXAMPLE)

    static let suiteSigner = SigV4Signer(
        accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        region: "us-east-1", service: "service")
    static let suiteHeaders: [(name: String, value: String)] = [
        ("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z"),
    ]

    @Test func getVanilla() {
        let result = Self.suiteSigner.sign(
            .init(method: "GET", canonicalURI: "/", headers: Self.suiteHeaders),
            payloadHash: Self.emptyHash, amzDate: "20150830T123600Z")
        #expect(
            result.canonicalRequest == """
                GET
                /

                host:example.amazonaws.com
                x-amz-date:20150830T123600Z

                host;x-amz-date
                \(Self.emptyHash)
                """)
        #expect(
            result.stringToSign == """
                AWS4-HMAC-SHA256
                20150830T123600Z
                20150830/us-east-1/service/aws4_request
                bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63
                """)
        #expect(result.signature == "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
        #expect(
            result.authorization
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                + "SignedHeaders=host;x-amz-date, "
                + "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
    }

    @Test func getVanillaQueryOrderKeyCase() {
        let result = Self.suiteSigner.sign(
            .init(
                method: "GET", canonicalURI: "/", query: [("Param2", "value2"), ("Param1", "value1")],
                headers: Self.suiteHeaders),
            payloadHash: Self.emptyHash, amzDate: "20150830T123600Z")
        #expect(
            result.canonicalRequest.split(separator: "\n", omittingEmptySubsequences: false)[2]
                == "Param1=value1&Param2=value2")
        #expect(result.signature == "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")
    }

    @Test func getUTF8() {
        let uri = "/" + URIEncoding.encodePath("ሴ")
        #expect(uri == "/%E1%88%B4")
        let result = Self.suiteSigner.sign(
            .init(method: "GET", canonicalURI: uri, headers: Self.suiteHeaders),
            payloadHash: Self.emptyHash, amzDate: "20150830T123600Z")
        #expect(result.signature == "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85")
    }

    /// The signing-key derivation and IAM ListUsers example of the SigV4 documentation.
    @Test func signingKeyAndIAMExample() {
        let iam = SigV4Signer(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            region: "us-east-1", service: "iam")
        let key = iam.signingKey(date: "20150830").withUnsafeBytes { Hex.encode($0) }
        #expect(key == "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9")

        let result = iam.sign(
            .init(
                method: "GET", canonicalURI: "/", query: [("Version", "2010-05-08"), ("Action", "ListUsers")],
                headers: [
                    ("Content-Type", "application/x-www-form-urlencoded; charset=utf-8"),
                    ("Host", "iam.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z"),
                ]),
            payloadHash: Self.emptyHash, amzDate: "20150830T123600Z")
        #expect(result.stringToSign.hasSuffix("\nf536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"))
        #expect(result.signature == "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7")
    }

    // MARK: S3 header-auth examples (AKIAIOSFODNN7EXAMPLE, examplebucket)

    static let s3Signer = SigV4Signer(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        region: "us-east-1", service: "s3")
    static let s3Date = "20130524T000000Z"

    @Test func s3GetObject() {
        let result = Self.s3Signer.sign(
            .init(
                method: "GET", canonicalURI: "/test.txt",
                headers: [
                    ("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
                    ("x-amz-content-sha256", Self.emptyHash), ("x-amz-date", Self.s3Date),
                ]),
            payloadHash: Self.emptyHash, amzDate: Self.s3Date)
        #expect(
            result.canonicalRequest == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:\(Self.emptyHash)
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                \(Self.emptyHash)
                """)
        #expect(result.stringToSign.hasSuffix("\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"))
        #expect(result.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func s3PutObject() {
        let body = Array("Welcome to Amazon S3.".utf8)
        let payloadHash = Hex.sha256(body)
        #expect(payloadHash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let uri = "/" + URIEncoding.encodePath("test$file.text")
        #expect(uri == "/test%24file.text")
        let result = Self.s3Signer.sign(
            .init(
                method: "PUT", canonicalURI: uri,
                headers: [
                    ("Host", "examplebucket.s3.amazonaws.com"), ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
                    ("x-amz-date", Self.s3Date), ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                    ("x-amz-content-sha256", payloadHash),
                ]),
            payloadHash: payloadHash, amzDate: Self.s3Date)
        #expect(result.signedHeaders == "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class")
        #expect(result.stringToSign.hasSuffix("\n9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d"))
        #expect(result.signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func s3GetBucketLifecycle() {
        let result = Self.s3Signer.sign(
            .init(
                method: "GET", canonicalURI: "/", query: [("lifecycle", "")],
                headers: [
                    ("Host", "examplebucket.s3.amazonaws.com"), ("x-amz-content-sha256", Self.emptyHash),
                    ("x-amz-date", Self.s3Date),
                ]),
            payloadHash: Self.emptyHash, amzDate: Self.s3Date)
        #expect(result.stringToSign.hasSuffix("\n9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca"))
        #expect(result.signature == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
    }

    @Test func s3ListObjects() {
        let result = Self.s3Signer.sign(
            .init(
                method: "GET", canonicalURI: "/", query: [("prefix", "J"), ("max-keys", "2")],
                headers: [
                    ("Host", "examplebucket.s3.amazonaws.com"), ("x-amz-content-sha256", Self.emptyHash),
                    ("x-amz-date", Self.s3Date),
                ]),
            payloadHash: Self.emptyHash, amzDate: Self.s3Date)
        #expect(result.signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    // MARK: Canonicalisation details

    @Test func headerValuesAreTrimmedAndRepeatedHeadersJoined() {
        let (block, signed) = SigV4Signer.canonicalHeaders([
            ("X-Amz-Meta-A", "  one   two  "), ("Host", "h"), ("x-amz-meta-a", "three"),
        ])
        #expect(block == "host:h\nx-amz-meta-a:one two,three\n")
        #expect(signed == "host;x-amz-meta-a")
    }

    @Test func queryComponentsAreEncodedAndSorted() {
        #expect(
            SigV4Signer.canonicalQuery([("b", "x y"), ("a", "2"), ("a", "1"), ("c/d", "+=&")])
                == "a=1&a=2&b=x%20y&c%2Fd=%2B%3D%26")
    }

    @Test func amzDateIsUTC() {
        // 2015-08-30T12:36:00Z
        #expect(SigV4Signer.amzDate(Date(timeIntervalSince1970: 1_440_938_160)) == "20150830T123600Z")
        #expect(SigV4Signer.amzDate(Date(timeIntervalSince1970: 1_440_938_160.9)) == "20150830T123600Z")
    }

    /// docs/ARCHITECTURE.md §7: the path is split on the `/` byte, so a prepend character before a
    /// slash (U+0600, one Character with the `/`) keeps the slash a separator, as on disk.
    @Test func encodePathSplitsOnSlashBytes() {
        #expect(URIEncoding.encodePath("a\u{0600}/b") == "a%D8%80/b")
        #expect(URIEncoding.encodePath("x/\u{0600}/y") == "x/%D8%80/y")
    }
}
