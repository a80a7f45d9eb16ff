//! Placeholder: replaced by the ApprovalStore implementation.
macro_rules! impl_approvals {
    ($store:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::ApprovalStore for $store {
            async fn approval_get(&self, _: &str) -> $crate::store::Result<Option<$crate::store::ApprovalRow>> { unimplemented!() }
            async fn approval_decide(&self, _: &str, _: &$crate::store::ApprovalDecision) -> $crate::store::Result<Option<$crate::store::ApprovalRow>> { unimplemented!() }
            async fn approvals_due(&self, _: i64, _: usize) -> $crate::store::Result<Vec<$crate::store::ApprovalRow>> { unimplemented!() }
            async fn approvals_pending(&self, _: &str) -> $crate::store::Result<Vec<$crate::store::ApprovalRow>> { unimplemented!() }
            async fn approval_granted(&self, _: &str, _: &str) -> $crate::store::Result<bool> { unimplemented!() }
        }
    };
}
pub(crate) use impl_approvals;
