//! Every AWS call goes through here: counted by service, operation and outcome, and its errors mapped to
//! what the provider answers (throttling and outages -> UNAVAILABLE, denials -> PERMISSION_DENIED, ...).
//! Retries with backoff are the SDK's own standard retry; nothing here retries again.

use crate::cloud::backend::CloudError;

use crate::cloud::backend::CloudObserver;
use aws_sdk_eks::error::{ProvideErrorMetadata, SdkError};
use std::future::Future;
use std::sync::Arc;

/// The three clients and the metrics they report to.
#[derive(Clone)]
pub struct Calls {
    pub eks: aws_sdk_eks::Client,
    pub autoscaling: aws_sdk_autoscaling::Client,
    pub ec2: aws_sdk_ec2::Client,
    metrics: Arc<dyn CloudObserver>,
}

const THROTTLING: [&str; 6] = [
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "RequestThrottled",
    "RequestThrottledException",
];

impl Calls {
    pub fn new(config: &aws_config::SdkConfig, metrics: Arc<dyn CloudObserver>) -> Calls {
        Calls {
            eks: aws_sdk_eks::Client::new(config),
            autoscaling: aws_sdk_autoscaling::Client::new(config),
            ec2: aws_sdk_ec2::Client::new(config),
            metrics,
        }
    }

    /// Clients built elsewhere (tests use mocked ones).
    pub fn from_clients(
        eks: aws_sdk_eks::Client,
        autoscaling: aws_sdk_autoscaling::Client,
        ec2: aws_sdk_ec2::Client,
        metrics: Arc<dyn CloudObserver>,
    ) -> Calls {
        Calls {
            eks,
            autoscaling,
            ec2,
            metrics,
        }
    }

    async fn observe<T, E: ProvideErrorMetadata, R>(
        &self,
        service: &'static str,
        operation: &'static str,
        call: impl Future<Output = Result<T, SdkError<E, R>>>,
    ) -> Result<T, SdkError<E, R>> {
        self.record(service, operation, call.await)
    }

    /// Counts one call's outcome (a page of a paginator is one call) and hands the result back.
    pub fn record<T, E: ProvideErrorMetadata, R>(
        &self,
        service: &'static str,
        operation: &'static str,
        result: Result<T, SdkError<E, R>>,
    ) -> Result<T, SdkError<E, R>> {
        self.metrics
            .observe_aws_call(service, operation, outcome(&result));
        result
    }

    pub async fn eks<T, E: ProvideErrorMetadata, R>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, SdkError<E, R>>>,
    ) -> Result<T, SdkError<E, R>> {
        self.observe("eks", operation, call).await
    }

    pub async fn autoscaling<T, E: ProvideErrorMetadata, R>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, SdkError<E, R>>>,
    ) -> Result<T, SdkError<E, R>> {
        self.observe("autoscaling", operation, call).await
    }

    pub async fn ec2<T, E: ProvideErrorMetadata, R>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, SdkError<E, R>>>,
    ) -> Result<T, SdkError<E, R>> {
        self.observe("ec2", operation, call).await
    }
}

/// A call's outcome as the metrics count it: "ok", "throttled", "error" or "unavailable".
pub(super) fn outcome<T, E: ProvideErrorMetadata, R>(
    result: &Result<T, SdkError<E, R>>,
) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(error) if error.code().is_some_and(|c| THROTTLING.contains(&c)) => "throttled",
        Err(SdkError::ServiceError(_)) => "error",
        Err(_) => "unavailable",
    }
}

/// An SDK error as the provider reports it, with AWS's own code and message.
pub fn sdk_error<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
    operation: &str,
    error: SdkError<E, R>,
) -> CloudError {
    let code = error.code().unwrap_or_default().to_string();
    let message = match (error.code(), error.message()) {
        (Some(code), Some(message)) => format!("{operation}: {code}: {message}"),
        (Some(code), None) => format!("{operation}: {code}"),
        _ => format!(
            "{operation}: {}",
            aws_sdk_eks::error::DisplayErrorContext(&error)
        ),
    };
    match code.as_str() {
        c if THROTTLING.contains(&c) => CloudError::Unavailable(message),
        "AccessDenied"
        | "AccessDeniedException"
        | "UnauthorizedOperation"
        | "UnrecognizedClientException" => CloudError::PermissionDenied(message),
        "ValidationError" | "InvalidParameterException" | "InvalidParameterValue" => {
            CloudError::FailedPrecondition(message)
        }
        "ResourceNotFoundException" => CloudError::NotFound(message),
        // Busy ASGs, contention, 5xx and transport failures: worth retrying later.
        _ => CloudError::Unavailable(message),
    }
}
