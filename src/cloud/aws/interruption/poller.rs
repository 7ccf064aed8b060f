//! The task that reads the interruption queue: long-polls it (ReceiveMessage, 20 s, up to 10 messages),
//! reads each message, records what it says and deletes it. A message that cannot be read, or names no
//! instance of a served node group, is counted ignored, logged once with why and deleted too: left on the
//! queue it would come back after every visibility timeout until the queue's retention dropped it, and
//! nothing can ever be done with it. A queue that fails is counted and retried after a backoff that
//! doubles to a minute; it never stops the provider.

use super::messages::{Notice, parse};
use super::record::{Membership, Record, Taken};
use crate::cloud::aws::calls::outcome;
use crate::cloud::backend::CloudObserver;
use aws_sdk_sqs::error::{DisplayErrorContext, SdkError};
use aws_sdk_sqs::types::Message;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// ReceiveMessage waits this long for a message (SQS's longest long poll).
const WAIT_SECONDS: i32 = 20;
/// ReceiveMessage takes at most this many messages (SQS's most).
const BATCH: i32 = 10;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const LONGEST_BACKOFF: Duration = Duration::from_secs(60);

/// Reads one queue into one record, for as long as the backend it serves lives.
pub struct Poller {
    pub client: aws_sdk_sqs::Client,
    /// The queue's URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`), or its name, which
    /// GetQueueUrl turns into its URL (as Karpenter's `--interruption-queue` takes it).
    pub queue: String,
    pub record: Arc<Record>,
    /// The backend's view: held weakly, so that the task ends with the backend.
    pub members: Weak<dyn Membership>,
    pub metrics: Arc<dyn CloudObserver>,
}

/// A call to the queue that failed.
#[derive(Debug, thiserror::Error)]
#[error("sqs:{operation}: {message}")]
struct QueueError {
    operation: &'static str,
    message: String,
}

/// A message's fate, as counted in `interruption_messages_total{kind,outcome}`.
struct Fate {
    kind: &'static str,
    outcome: &'static str,
}

impl Poller {
    /// Runs in a task of its own.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run())
    }

    async fn run(self) {
        let mut backoff = FIRST_BACKOFF;
        let mut url = None;
        while self.members.strong_count() > 0 {
            let step = match &url {
                None => self.resolve().await.map(|found| url = Some(found)),
                Some(url) => self.poll(url).await,
            };
            match step {
                Ok(()) => backoff = FIRST_BACKOFF,
                Err(error) => {
                    self.metrics.observe_interruption_queue_error();
                    let queue = &self.queue;
                    let retry_in = backoff;
                    tracing::warn!(queue, %error, ?retry_in, "interruption queue failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(LONGEST_BACKOFF);
                }
            }
        }
    }

    /// The queue's URL: given, or asked of SQS by its name.
    async fn resolve(&self) -> Result<String, QueueError> {
        let url = if self.queue.starts_with("https://") || self.queue.starts_with("http://") {
            self.queue.clone()
        } else {
            let request = self.client.get_queue_url().queue_name(&self.queue);
            let output = self.call("GetQueueUrl", request.send().await)?;
            output.queue_url().unwrap_or_default().to_string()
        };
        tracing::info!(queue = self.queue, url, "reading the interruption queue");
        Ok(url)
    }

    /// One long poll, and every message it brought recorded and deleted.
    async fn poll(&self, url: &str) -> Result<(), QueueError> {
        let request = (self.client.receive_message())
            .queue_url(url)
            .wait_time_seconds(WAIT_SECONDS)
            .max_number_of_messages(BATCH);
        let output = self.call("ReceiveMessage", request.send().await)?;
        for message in output.messages() {
            let fate = self.handle(message);
            let deleted = self.delete(url, message).await;
            // Counted once deleted: a count that says a message was handled says it has left the queue.
            self.metrics
                .observe_interruption_message(fate.kind, "received");
            self.metrics
                .observe_interruption_message(fate.kind, fate.outcome);
            deleted?;
        }
        Ok(())
    }

    /// Reads one message and records what it says.
    fn handle(&self, message: &Message) -> Fate {
        let id = message.message_id().unwrap_or_default();
        let notice = match parse(message.body().unwrap_or_default()) {
            Ok(notice) => notice,
            Err(why) => {
                tracing::warn!(message = id, %why, "interruption message ignored");
                return Fate {
                    kind: why.kind(),
                    outcome: "ignored",
                };
            }
        };
        let kind = notice.kind.as_str();
        let Some(members) = self.members.upgrade() else {
            return Fate {
                kind,
                outcome: "ignored",
            };
        };
        match self.record.take(&notice, members.as_ref()) {
            Taken::UnknownInstance(instances) => {
                // Debug: the rules see every instance of the account, most of them in no served group.
                tracing::debug!(
                    message = id,
                    kind,
                    ?instances,
                    "interruption message ignored: unknownInstance (in no node group served)"
                );
                Fate {
                    kind,
                    outcome: "ignored",
                }
            }
            taken => {
                log_taken(id, &notice, &taken);
                Fate {
                    kind,
                    outcome: "parsed",
                }
            }
        }
    }

    async fn delete(&self, url: &str, message: &Message) -> Result<(), QueueError> {
        let Some(handle) = message.receipt_handle() else {
            return Ok(());
        };
        let request = self
            .client
            .delete_message()
            .queue_url(url)
            .receipt_handle(handle);
        // A message not deleted comes back after its visibility timeout and is recorded again, which
        // changes nothing: the error is counted and the poll goes on after the backoff.
        self.call("DeleteMessage", request.send().await).map(drop)
    }

    /// Counts one SQS call as every AWS call is counted, its error said with AWS's code and message.
    fn call<T, E, R>(
        &self,
        operation: &'static str,
        result: Result<T, SdkError<E, R>>,
    ) -> Result<T, QueueError>
    where
        E: aws_sdk_sqs::error::ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        let outcome = outcome(&result);
        self.metrics.observe_aws_call("sqs", operation, outcome);
        result.map_err(|e| QueueError {
            operation,
            message: DisplayErrorContext(&e).to_string(),
        })
    }
}

fn log_taken(id: &str, notice: &Notice, taken: &Taken) {
    let at = jiff::Timestamp::try_from(notice.at).map_or_else(|_| "?".into(), |t| t.to_string());
    let kind = notice.kind.as_str();
    let instances = &notice.instances;
    let detail = &notice.detail;
    match *taken {
        Taken::Recorded {
            taken: 0,
            kept_stronger,
        } => tracing::debug!(
            message = id,
            kind,
            ?instances,
            kept_stronger,
            "interruption message changed nothing: each instance keeps the stronger reason it has"
        ),
        Taken::Recorded {
            taken,
            kept_stronger,
        } => tracing::info!(
            message = id,
            kind,
            ?instances,
            at,
            detail,
            taken,
            kept_stronger,
            "interruption message recorded"
        ),
        Taken::NothingSaid | Taken::UnknownInstance(_) => tracing::debug!(
            message = id,
            kind,
            ?instances,
            detail,
            "interruption message says nothing of an instance leaving"
        ),
    }
}
