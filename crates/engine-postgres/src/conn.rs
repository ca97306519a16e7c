//! A worker's connection: `tokio_postgres` driven on the worker's own thread by a
//! runtime of its own, so that several statements can go out in one round trip
//! (`tokio_postgres` pipelines the requests of futures polled together). The blocking
//! `postgres` crate has no way to do that; otherwise this is what it does.

use futures_util::future::{join4, OptionFuture};
use futures_util::{pin_mut, SinkExt, TryStreamExt};
use postgres::types::ToSql;
use postgres::{Error, NoTls, Row, Statement};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// What a statement sent: its rows (none for a write without `RETURNING`) and the
/// count of rows it touched (a write's; a select's rows).
pub struct Sent {
    pub rows: Vec<Row>,
    pub count: u64,
}

pub struct Conn {
    /// Always `Some` but in `drop`, which drops it first (queuing the server's
    /// Terminate) and then lets the connection finish.
    client: Option<tokio_postgres::Client>,
    driver: Option<JoinHandle<()>>,
    rt: Runtime,
}

impl Conn {
    pub fn connect(url: &str) -> std::result::Result<Conn, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("postgres: cannot start a runtime: {e}"))?;
        let (client, connection) = rt
            .block_on(tokio_postgres::connect(url, NoTls))
            .map_err(|e| format!("postgres: cannot connect ({url}): {e}"))?;
        // The task runs only while a request waits in `block_on` (a current-thread
        // runtime), which is when it has work.
        let driver = rt.spawn(async move {
            // A broken connection fails the requests waiting on it; nothing to add.
            let _ = connection.await;
        });
        Ok(Conn {
            client: Some(client),
            driver: Some(driver),
            rt,
        })
    }

    fn client(&self) -> &tokio_postgres::Client {
        self.client.as_ref().expect("taken only by drop")
    }

    pub fn prepare(&self, sql: &str) -> Result<Statement, Error> {
        self.rt.block_on(self.client().prepare(sql))
    }

    pub fn batch_execute(&self, sql: &str) -> Result<(), Error> {
        self.rt.block_on(self.client().batch_execute(sql))
    }

    /// Run `st`, with the statements `before` (at most two, with their parameters) sent
    /// ahead of it and `after` behind it in the same round trip. The server runs them
    /// in order whatever fails: after a failed statement in a transaction a COMMIT
    /// `after` rolls back. The first error is returned.
    pub fn run(
        &self,
        before: &[(&Statement, &[&(dyn ToSql + Sync)])],
        st: &Statement,
        params: &[&(dyn ToSql + Sync)],
        after: Option<&Statement>,
    ) -> Result<Sent, Error> {
        let c = self.client();
        let main = async {
            let rows = c
                .query_raw(st, params.iter().map(|p| *p as &dyn ToSql))
                .await?;
            pin_mut!(rows);
            let mut out = Vec::new();
            while let Some(r) = rows.try_next().await? {
                out.push(r);
            }
            let count = rows.rows_affected().unwrap_or(out.len() as u64);
            Ok::<_, Error>(Sent { rows: out, count })
        };
        assert!(
            before.len() <= 2,
            "at most BEGIN and the kept writes go first"
        );
        let pre =
            |i: usize| -> OptionFuture<_> { before.get(i).map(|(s, p)| c.execute(*s, p)).into() };
        let last: OptionFuture<_> = after.map(|s| c.execute(s, &[])).into();
        // Polled in order: each request is queued at its first poll, so the server
        // receives them in this order.
        let (b0, b1, m, a) = self.rt.block_on(join4(pre(0), pre(1), main, last));
        b0.transpose()?;
        b1.transpose()?;
        let m = m?;
        a.transpose()?;
        Ok(m)
    }

    /// COPY `data` (COPY's text format) with the statement `sql` (`COPY ... FROM STDIN`).
    pub fn copy_in(&self, sql: &str, data: Vec<u8>) -> Result<u64, Error> {
        let c = self.client();
        self.rt.block_on(async {
            let sink = c.copy_in::<_, bytes::Bytes>(sql).await?;
            pin_mut!(sink);
            sink.send(bytes::Bytes::from(data)).await?;
            sink.finish().await
        })
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Dropping the client queues Terminate; the connection then sends it and ends.
        self.client = None;
        if let Some(d) = self.driver.take() {
            let _ = self.rt.block_on(d);
        }
    }
}
