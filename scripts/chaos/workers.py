"""The worker processes, supervised as an orchestrator would."""
import os
import signal
import subprocess
import threading
import time

from .stack import log


class Workers:
    """Two worker processes, restarted after they exit, as an orchestrator would."""

    def __init__(self, binary, environment, logs, count=2):
        self.binary, self.environment, self.logs = binary, environment, logs
        self.processes = [None] * count
        self.exits = []  # (worker, returncode)
        self.stopping = False
        self.lock = threading.Lock()
        for index in range(count):
            self.start(index)
        self.thread = threading.Thread(target=self.supervise, daemon=True)
        self.thread.start()

    def start(self, index):
        # CHAOS_HTTP_PORT moves the workers' endpoints when another chaos run holds 18480 on this machine.
        env = dict(self.environment, AVATAR_HTTP_PORT=str(int(os.environ.get("CHAOS_HTTP_PORT", "18480")) + index))
        out = open(os.path.join(self.logs, f"worker-{index}.log"), "a")
        # A session (and process group) of its own, killed whole as a container is: a worker killed while the Swift
        # runtime's crash backtracer (swift-backtrace, a child) inspects it leaves that child waiting forever with
        # the worker's listening socket, and the next worker could not bind its port.
        self.processes[index] = subprocess.Popen(
            [self.binary, "worker"], env=env, stdout=out, stderr=out, start_new_session=True)

    def supervise(self):
        while not self.stopping:
            with self.lock:
                for index, process in enumerate(self.processes):
                    code = process.poll()
                    if code is not None and not self.stopping:
                        self.kill_group(process)  # what the worker left behind goes with it, as in a container
                        self.exits.append((index, code))
                        log(f"worker {index} exited ({describe_exit(code)}); restarting it")
                        time.sleep(1)
                        self.start(index)
            time.sleep(0.2)

    def kill(self, index):
        with self.lock:
            self.kill_group(self.processes[index])

    @staticmethod
    def kill_group(process):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self):
        self.stopping = True
        for process in self.processes:
            process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()


def describe_exit(code):
    return f"signal {-code}" if code < 0 else f"status {code}"
