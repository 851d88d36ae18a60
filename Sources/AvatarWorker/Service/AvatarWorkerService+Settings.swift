import Messaging

extension AvatarWorkerService {
    /// The worker's flow settings, from `ConfigurationKey` (`WorkerFactory.build`).
    public struct Settings: Sendable {
        public var topic: String
        public var groupID: String
        public var kafka: KafkaConfiguration
        /// Renders at once (`worker.render-slots`).
        public var renderSlots: Int
        /// Jobs the pool runs at once (`worker.jobs-in-flight`, at least `renderSlots`): the ones without a
        /// render slot fetch, upload and commit meanwhile.
        public var jobsInFlight: Int
        public var maxBufferedPerPartition: Int
        public var drainDeadline: Duration
        public var commitInterval: Duration
        /// A job running past this ends as TIMEOUT, its render helper killed (`worker.job-timeout-seconds`).
        public var jobTimeout: Duration

        public init(
            topic: String, groupID: String, kafka: KafkaConfiguration, renderSlots: Int, jobsInFlight: Int,
            maxBufferedPerPartition: Int, drainDeadline: Duration, commitInterval: Duration, jobTimeout: Duration
        ) {
            precondition(jobsInFlight >= renderSlots, "every render is a job in flight")
            self.topic = topic
            self.groupID = groupID
            self.kafka = kafka
            self.renderSlots = renderSlots
            self.jobsInFlight = jobsInFlight
            self.maxBufferedPerPartition = maxBufferedPerPartition
            self.drainDeadline = drainDeadline
            self.commitInterval = commitInterval
            self.jobTimeout = jobTimeout
        }
    }
}
