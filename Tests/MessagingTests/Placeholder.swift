import Testing
@Test func placeholder_MessagingTests() {}
