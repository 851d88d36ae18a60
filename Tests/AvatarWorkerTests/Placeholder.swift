import Testing
@Test func placeholder_AvatarWorkerTests() {}
