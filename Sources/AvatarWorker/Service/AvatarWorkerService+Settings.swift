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
        /// A job running past this ends as TIMEOUT and its thread is written off (`worker.job-timeout-seconds`).
        public var jobTimeout: Duration
        /// Written-off threads still stuck at which the worker leaves and exits non-zero (`worker.max-stuck-threads`).
        public var maxStuckThreads: Int

        public init(
            topic: String, groupID: String, kafka: KafkaConfiguration, renderSlots: Int, jobsInFlight: Int,
            maxBufferedPerPartition: Int, drainDeadline: Duration, commitInterval: Duration, jobTimeout: Duration,
            maxStuckThreads: Int
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
            self.maxStuckThreads = maxStuckThreads
        }
    }
}
