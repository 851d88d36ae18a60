import Foundation
import Logging
import Testing

@testable import Storage

@Suite struct S3RequestBuilderTests {
    static func configuration(
        endpoint: String, bucket: String = "avatars", pathStyle: Bool = true, sessionToken: String? = nil
    ) -> S3Configuration {
        S3Configuration(
            endpoint: URL(string: endpoint)!, region: "us-east-1", bucket: bucket, accessKeyID: "AKID",
            secretAccessKey: "SECRET", sessionToken: sessionToken, pathStyle: pathStyle)
    }

    @Test func pathStyleKeysWithSpacesAndUnicodeAreEncodedOncePerSegment() throws {
        let builder = try S3RequestBuilder(configuration: Self.configuration(endpoint: "http://127.0.0.1:58333"))
        let key = "users/Zoë Ünïcødé/アバター 512+(1).png"
        let expectedPath =
            "/avatars/users/Zo%C3%AB%20%C3%9Cn%C3%AFc%C3%B8d%C3%A9/"
            + "%E3%82%A2%E3%83%90%E3%82%BF%E3%83%BC%20512%2B%281%29.png"
        #expect(builder.path(for: key) == expectedPath)
        let url = try #require(builder.url(for: key))
        #expect(url.absoluteString == "http://127.0.0.1:58333" + expectedPath)
        #expect(builder.hostHeader == "127.0.0.1:58333")
        #expect(builder.path(for: nil) == "/avatars/")
    }

    @Test func theSignedPathIsTheSentPath() throws {
        let builder = try S3RequestBuilder(configuration: Self.configuration(endpoint: "http://127.0.0.1:58333"))
        let date = Date(timeIntervalSince1970: 1_440_938_160)
        let request = try builder.request(
            method: "PUT", key: "a b/ü.png", body: [1, 2, 3],
            extraHeaders: [("content-type", "image/png"), ("cache-control", "no-cache")], date: date)
        let payloadHash = Hex.sha256([UInt8]([1, 2, 3]))
        #expect(request.method == "PUT")
        #expect(request.url == "http://127.0.0.1:58333/avatars/a%20b/%C3%BC.png")
        #expect(request.header("x-amz-content-sha256") == payloadHash)
        #expect(request.header("x-amz-date") == "20150830T123600Z")
        #expect(request.header("Content-Type") == "image/png")
        #expect(request.header("Cache-Control") == "no-cache")
        #expect(request.body == [1, 2, 3])
        #expect(request.header("host") == "127.0.0.1:58333")

        let expected = builder.signer.sign(
            .init(
                method: "PUT", canonicalURI: "/avatars/a%20b/%C3%BC.png",
                headers: [
                    ("host", "127.0.0.1:58333"), ("x-amz-date", "20150830T123600Z"),
                    ("x-amz-content-sha256", payloadHash), ("content-type", "image/png"),
                    ("cache-control", "no-cache"),
                ]),
            payloadHash: payloadHash, amzDate: "20150830T123600Z")
        #expect(request.header("Authorization") == expected.authorization)
        #expect(expected.signedHeaders == "cache-control;content-type;host;x-amz-content-sha256;x-amz-date")
    }

    @Test func defaultPortsAreLeftOutOfTheHostHeader() throws {
        let https = try S3RequestBuilder(configuration: Self.configuration(endpoint: "https://S3.Example.com:443"))
        #expect(https.hostHeader == "s3.example.com")
        let http = try S3RequestBuilder(configuration: Self.configuration(endpoint: "http://minio:9000"))
        #expect(http.hostHeader == "minio:9000")
    }

    @Test func virtualHostedStylePutsTheBucketInTheHost() throws {
        let builder = try S3RequestBuilder(
            configuration: Self.configuration(endpoint: "https://s3.eu-west-1.amazonaws.com", pathStyle: false))
        #expect(builder.hostHeader == "avatars.s3.eu-west-1.amazonaws.com")
        #expect(builder.url(for: "a b.png")?.absoluteString == "https://avatars.s3.eu-west-1.amazonaws.com/a%20b.png")
        #expect(builder.path(for: nil) == "/")
    }

    @Test func anEndpointPathPrefixIsKept() throws {
        // Supabase Storage: https://<project>.supabase.co/storage/v1/s3
        let builder = try S3RequestBuilder(
            configuration: Self.configuration(endpoint: "https://project.supabase.co/storage/v1/s3/"))
        #expect(builder.path(for: "u/a.png") == "/storage/v1/s3/avatars/u/a.png")
        #expect(
            builder.url(for: "u/a.png")?.absoluteString == "https://project.supabase.co/storage/v1/s3/avatars/u/a.png")
    }

    @Test func aSessionTokenIsSentAndSigned() throws {
        let builder = try S3RequestBuilder(
            configuration: Self.configuration(endpoint: "http://127.0.0.1:1", sessionToken: "TOKEN"))
        let request = try builder.request(method: "GET", key: "k", body: nil)
        #expect(request.header("x-amz-security-token") == "TOKEN")
        #expect(request.header("Authorization")?.contains("x-amz-security-token") == true)
        #expect(request.header("x-amz-content-sha256") == SigV4Signer.emptyPayloadHash)
    }

    @Test(arguments: ["ftp://host", "http://", "not a url", "http://host/?q=1"])
    func unusableEndpointsAreInvalidConfiguration(_ endpoint: String) {
        guard let url = URL(string: endpoint) else { return }
        do {
            _ = try S3RequestBuilder(
                configuration: S3Configuration(
                    endpoint: url, region: "us-east-1", bucket: "b", accessKeyID: "a", secretAccessKey: "s"))
            Issue.record("accepted \(endpoint)")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
    }

    @Test func anUnusableConfigurationFailsEveryCallButNotTheInitializer() {
        let configuration = S3Configuration(
            endpoint: URL(string: "ftp://host")!, region: "us-east-1", bucket: "b", accessKeyID: "a",
            secretAccessKey: "s")
        #expect(throws: StorageError.self) { try S3Store.validate(configuration) }
        let store = S3Store(configuration: configuration, logger: Logger(label: "storage-tests"))
        do {
            try store.ping()
            Issue.record("ping succeeded")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
        do {
            _ = try store.get("a.png")
            Issue.record("get succeeded")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
        do {
            try store.put("a.png", data: [], options: PutOptions(contentType: "x/y"))
            Issue.record("put succeeded")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
    }

    @Test func configurationDescriptionHidesTheSecret() {
        let configuration = Self.configuration(endpoint: "http://h", sessionToken: "TOKEN-VALUE")
        #expect(!configuration.description.contains("SECRET"))
        #expect(!configuration.description.contains("TOKEN-VALUE"))
        #expect(!String(describing: configuration).contains("SECRET"))
    }
}

@Suite struct S3ErrorMappingTests {
    static func response(_ status: Int, _ s3Code: String? = nil) -> HTTPResponse {
        let body = s3Code.map {
            "<?xml version=\"1.0\"?><Error><Code>\($0)</Code><Message>msg</Message>"
                + "<Key>users/secret-user/avatar.png</Key><BucketName>private-bucket</BucketName></Error>"
        }
        return HTTPResponse(status: status, headers: [:], body: Array((body ?? "").utf8))
    }

    @Test(
        arguments: [
            (404, "NoSuchKey", StorageError.Code.notFound, false),
            (403, "SignatureDoesNotMatch", .accessDenied, false),
            (401, nil, .accessDenied, false),
            (500, "InternalError", .unavailable, true),
            (503, "SlowDown", .unavailable, true),
            (429, nil, .unavailable, true),
            (408, nil, .unavailable, true),
            (400, "RequestTimeout", .unavailable, true),
            (400, "InvalidArgument", .rejected, false),
            (301, "PermanentRedirect", .rejected, false),
            (409, nil, .rejected, false),
        ] as [(Int, String?, StorageError.Code, Bool)])
    func statusesMapToCodes(_ status: Int, _ s3Code: String?, _ code: StorageError.Code, _ transient: Bool) {
        let error = S3Store.error(for: Self.response(status, s3Code), operation: .put)
        #expect(error.code == code)
        #expect(error.isTransient == transient)
        #expect(error.httpStatus == status)
        #expect(error.operation == .put)
    }

    @Test func xmlTextReadsElementsAndDecodesEntities() {
        let xml = "<R><Key>a &amp; b</Key><Key>&lt;c&gt; &#233;&#x4E2D; &quot;&apos; &bogus; &</Key></R>"
        #expect(XMLText.elements("Key", in: xml) == ["a & b", "<c> é中 \"' &bogus; &"])
        #expect(XMLText.elements("Missing", in: xml).isEmpty)
    }

    @Test func queryParametersAreInTheURLAsSigned() throws {
        let builder = try S3RequestBuilder(
            configuration: S3RequestBuilderTests.configuration(endpoint: "http://127.0.0.1:58333"))
        let request = try builder.request(
            method: "GET", key: nil, query: [("prefix", "a b/"), ("list-type", "2")], body: nil)
        #expect(request.url == "http://127.0.0.1:58333/avatars/?list-type=2&prefix=a%20b%2F")
    }

    @Test func descriptionsCarryNoKeyOrBucket() {
        let error = S3Store.error(for: Self.response(404, "NoSuchKey"), operation: .get)
        #expect(error.description == "storage error: notFound during get (HTTP 404), permanent")
        #expect(error.debugDescription.contains("NoSuchKey: msg"))
        for text in [error.description, error.debugDescription] {
            #expect(!text.contains("secret-user"))
            #expect(!text.contains("private-bucket"))
        }
    }
}
