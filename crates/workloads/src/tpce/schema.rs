//! TPC-E schema: the 33 tables' rows (fixed-layout Pod structs), their key encodings and
//! the secondary indexes the transactions use. Owns the byte layout of every TPC-E row
//! and key; it must never contain transaction logic.
//!
//! Representation: identifiers (IDENT_T, TRADE_T) are `u64`; money and prices are `i64`
//! cents; rates are `u32` in units of 1/10,000 (percent with two decimals for the
//! commission, a fraction for tax); dates are `u64` microseconds since the Unix epoch.
//! Character columns keep the specification's widths, except NEWS_ITEM.NI_ITEM (a
//! 100,000-byte LOB in the specification, 512 bytes here) and CO_NAME, whose generated
//! values are at most [`CO_NAME_KEY`] bytes so that the name index fits the 64-byte key
//! cap. Secondary keys never change on update (an `api` rule): the TRADE indexes order
//! an account's or a security's trades by T_ID (submission order) instead of T_DTS; see
//! docs/design/tpce.md.

use api::key::Key;
use api::row::field;
use api::{IndexKind, Schema, TableDef, TableId};
use bytemuck::{Pod, Zeroable};
use std::mem::{offset_of, size_of};

mod typed;

// Dimension tables (and TRADE_TYPE, a broker table, kept with the other small ones).
pub const STATUS_TYPE: TableId = TableId(0);
pub const TRADE_TYPE: TableId = TableId(1);
pub const TAXRATE: TableId = TableId(2);
pub const ZIP_CODE: TableId = TableId(3);
pub const ADDRESS: TableId = TableId(4);
// Market tables.
pub const EXCHANGE: TableId = TableId(5);
pub const SECTOR: TableId = TableId(6);
pub const INDUSTRY: TableId = TableId(7);
pub const COMPANY: TableId = TableId(8);
pub const COMPANY_COMPETITOR: TableId = TableId(9);
pub const SECURITY: TableId = TableId(10);
pub const DAILY_MARKET: TableId = TableId(11);
pub const FINANCIAL: TableId = TableId(12);
pub const LAST_TRADE: TableId = TableId(13);
pub const NEWS_ITEM: TableId = TableId(14);
pub const NEWS_XREF: TableId = TableId(15);
// Customer tables.
pub const CUSTOMER: TableId = TableId(16);
pub const CUSTOMER_ACCOUNT: TableId = TableId(17);
pub const ACCOUNT_PERMISSION: TableId = TableId(18);
pub const CUSTOMER_TAXRATE: TableId = TableId(19);
pub const HOLDING: TableId = TableId(20);
pub const HOLDING_HISTORY: TableId = TableId(21);
pub const HOLDING_SUMMARY: TableId = TableId(22);
pub const WATCH_LIST: TableId = TableId(23);
pub const WATCH_ITEM: TableId = TableId(24);
// Broker tables.
pub const BROKER: TableId = TableId(25);
pub const CASH_TRANSACTION: TableId = TableId(26);
pub const CHARGE: TableId = TableId(27);
pub const COMMISSION_RATE: TableId = TableId(28);
pub const SETTLEMENT: TableId = TableId(29);
pub const TRADE: TableId = TableId(30);
pub const TRADE_HISTORY: TableId = TableId(31);
pub const TRADE_REQUEST: TableId = TableId(32);

pub const TABLES: usize = 33;

/// Table names, by id, with their group (the specification's four).
pub const TABLE_GROUPS: [(&str, &str); TABLES] = [
    ("status_type", "dimension"),
    ("trade_type", "broker"),
    ("taxrate", "dimension"),
    ("zip_code", "dimension"),
    ("address", "dimension"),
    ("exchange", "market"),
    ("sector", "market"),
    ("industry", "market"),
    ("company", "market"),
    ("company_competitor", "market"),
    ("security", "market"),
    ("daily_market", "market"),
    ("financial", "market"),
    ("last_trade", "market"),
    ("news_item", "market"),
    ("news_xref", "market"),
    ("customer", "customer"),
    ("customer_account", "customer"),
    ("account_permission", "customer"),
    ("customer_taxrate", "customer"),
    ("holding", "customer"),
    ("holding_history", "customer"),
    ("holding_summary", "customer"),
    ("watch_list", "customer"),
    ("watch_item", "customer"),
    ("broker", "broker"),
    ("cash_transaction", "broker"),
    ("charge", "broker"),
    ("commission_rate", "broker"),
    ("settlement", "broker"),
    ("trade", "broker"),
    ("trade_history", "broker"),
    ("trade_request", "broker"),
];

/// Bytes of CO_NAME that its index keys (generated names are never longer).
pub const CO_NAME_KEY: usize = 48;
pub const SYMB_LEN: usize = 15;
pub type Symb = [u8; SYMB_LEN];
pub type St = [u8; 4];
pub type Tt = [u8; 3];

// ---- dimension ----

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct StatusType {
    pub st_id: St,
    pub st_name: [u8; 10],
    pub _pad: [u8; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TradeType {
    pub tt_id: Tt,
    pub tt_name: [u8; 12],
    pub tt_is_sell: u8,
    pub tt_is_mrkt: u8,
    pub _pad: [u8; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Taxrate {
    /// Fraction of the gain, in 1/10,000.
    pub tx_rate: u32,
    pub tx_id: [u8; 4],
    pub tx_name: [u8; 50],
    pub _pad: [u8; 6],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ZipCode {
    pub zc_code: [u8; 12],
    pub zc_town: [u8; 80],
    pub zc_div: [u8; 80],
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Address {
    pub ad_id: u64,
    pub ad_line1: [u8; 80],
    pub ad_line2: [u8; 80],
    pub ad_zc_code: [u8; 12],
    pub ad_ctry: [u8; 80],
    pub _pad: [u8; 4],
}

// ---- market ----

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Exchange {
    pub ex_ad_id: u64,
    pub ex_num_symb: u32,
    /// Minutes after midnight.
    pub ex_open: u32,
    pub ex_close: u32,
    pub ex_id: [u8; 6],
    pub ex_name: [u8; 100],
    pub ex_desc: [u8; 150],
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Sector {
    pub sc_id: [u8; 2],
    pub sc_name: [u8; 30],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Industry {
    pub in_id: [u8; 2],
    pub in_name: [u8; 50],
    pub in_sc_id: [u8; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Company {
    pub co_id: u64,
    pub co_ad_id: u64,
    pub co_open_date: u64,
    pub co_st_id: St,
    pub co_name: [u8; 60],
    pub co_in_id: [u8; 2],
    pub co_sp_rate: [u8; 4],
    pub co_ceo: [u8; 46],
    pub co_desc: [u8; 150],
    pub _pad: [u8; 6],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CompanyCompetitor {
    pub cp_co_id: u64,
    pub cp_comp_co_id: u64,
    pub cp_in_id: [u8; 2],
    pub _pad: [u8; 6],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Security {
    pub s_co_id: u64,
    pub s_num_out: u64,
    pub s_start_date: u64,
    pub s_exch_date: u64,
    /// Price/earnings ratio in 1/100.
    pub s_pe: i64,
    pub s_52wk_high: i64,
    pub s_52wk_high_date: u64,
    pub s_52wk_low: i64,
    pub s_52wk_low_date: u64,
    pub s_dividend: i64,
    /// Yield in 1/10,000.
    pub s_yield: u32,
    pub s_symb: Symb,
    pub s_issue: [u8; 6],
    pub s_st_id: St,
    pub s_name: [u8; 70],
    pub s_ex_id: [u8; 6],
    pub _pad: [u8; 7],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct DailyMarket {
    pub dm_date: u64,
    pub dm_close: i64,
    pub dm_high: i64,
    pub dm_low: i64,
    pub dm_vol: u64,
    pub dm_s_symb: Symb,
    pub _pad: [u8; 1],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Financial {
    pub fi_co_id: u64,
    pub fi_qtr_start_date: u64,
    pub fi_revenue: i64,
    pub fi_net_earn: i64,
    pub fi_basic_eps: i64,
    pub fi_dilut_eps: i64,
    /// Margin in 1/10,000.
    pub fi_margin: i64,
    pub fi_inventory: i64,
    pub fi_assets: i64,
    pub fi_liability: i64,
    pub fi_out_basic: u64,
    pub fi_out_dilut: u64,
    pub fi_year: u32,
    pub fi_qtr: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct LastTrade {
    pub lt_dts: u64,
    pub lt_price: i64,
    pub lt_open_price: i64,
    pub lt_vol: u64,
    pub lt_s_symb: Symb,
    pub _pad: [u8; 1],
}

pub const NI_ITEM_LEN: usize = 512;

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct NewsItem {
    pub ni_id: u64,
    pub ni_dts: u64,
    pub ni_headline: [u8; 80],
    pub ni_summary: [u8; 255],
    pub ni_item: [u8; NI_ITEM_LEN],
    pub ni_source: [u8; 30],
    pub ni_author: [u8; 30],
    pub _pad: [u8; 5],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct NewsXref {
    pub nx_ni_id: u64,
    pub nx_co_id: u64,
}

// ---- customer ----

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Phone {
    pub ctry: [u8; 3],
    pub area: [u8; 3],
    pub local: [u8; 10],
    pub ext: [u8; 5],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Customer {
    pub c_id: u64,
    pub c_dob: u64,
    pub c_ad_id: u64,
    pub c_tax_id: [u8; 20],
    pub c_st_id: St,
    pub c_l_name: [u8; 25],
    pub c_f_name: [u8; 20],
    pub c_m_name: u8,
    pub c_gndr: u8,
    pub c_tier: u8,
    pub c_phone: [Phone; 3],
    pub c_email_1: [u8; 50],
    pub c_email_2: [u8; 50],
    pub _pad: [u8; 5],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CustomerAccount {
    pub ca_id: u64,
    pub ca_b_id: u64,
    pub ca_c_id: u64,
    pub ca_bal: i64,
    pub ca_name: [u8; 50],
    pub ca_tax_st: u8,
    pub _pad: [u8; 5],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct AccountPermission {
    pub ap_ca_id: u64,
    pub ap_acl: [u8; 4],
    pub ap_tax_id: [u8; 20],
    pub ap_l_name: [u8; 25],
    pub ap_f_name: [u8; 20],
    pub _pad: [u8; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CustomerTaxrate {
    pub cx_c_id: u64,
    pub cx_tx_id: [u8; 4],
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Holding {
    pub h_t_id: u64,
    pub h_ca_id: u64,
    pub h_dts: u64,
    pub h_price: i64,
    /// Negative for a short position.
    pub h_qty: i64,
    pub h_s_symb: Symb,
    pub _pad: [u8; 1],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct HoldingHistory {
    pub hh_h_t_id: u64,
    pub hh_t_id: u64,
    pub hh_before_qty: i64,
    pub hh_after_qty: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct HoldingSummary {
    pub hs_ca_id: u64,
    pub hs_qty: i64,
    pub hs_s_symb: Symb,
    pub _pad: [u8; 1],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct WatchList {
    pub wl_id: u64,
    pub wl_c_id: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct WatchItem {
    pub wi_wl_id: u64,
    pub wi_s_symb: Symb,
    pub _pad: [u8; 1],
}

// ---- broker ----

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Broker {
    pub b_id: u64,
    pub b_num_trades: u64,
    pub b_comm_total: i64,
    pub b_st_id: St,
    pub b_name: [u8; 49],
    pub _pad: [u8; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CashTransaction {
    pub ct_t_id: u64,
    pub ct_dts: u64,
    pub ct_amt: i64,
    pub ct_name: [u8; 100],
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Charge {
    pub ch_chrg: i64,
    pub ch_tt_id: Tt,
    pub ch_c_tier: u8,
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct CommissionRate {
    pub cr_from_qty: u32,
    pub cr_to_qty: u32,
    /// Percent of the trade value, in 1/100 of a percent.
    pub cr_rate: u32,
    pub cr_tt_id: Tt,
    pub cr_c_tier: u8,
    pub cr_ex_id: [u8; 6],
    pub _pad: [u8; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Settlement {
    pub se_t_id: u64,
    pub se_cash_due_date: u64,
    pub se_amt: i64,
    pub se_cash_type: [u8; 40],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Trade {
    pub t_id: u64,
    pub t_dts: u64,
    pub t_ca_id: u64,
    pub t_bid_price: i64,
    pub t_trade_price: i64,
    pub t_chrg: i64,
    pub t_comm: i64,
    pub t_tax: i64,
    pub t_qty: u32,
    pub t_st_id: St,
    pub t_tt_id: Tt,
    pub t_is_cash: u8,
    pub t_lifo: u8,
    pub t_s_symb: Symb,
    pub t_exec_name: [u8; 49],
    pub _pad: [u8; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TradeHistory {
    pub th_t_id: u64,
    pub th_dts: u64,
    pub th_st_id: St,
    pub _pad: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct TradeRequest {
    pub tr_t_id: u64,
    pub tr_b_id: u64,
    pub tr_bid_price: i64,
    pub tr_qty: u32,
    pub tr_tt_id: Tt,
    pub tr_s_symb: Symb,
    pub _pad: [u8; 2],
}

// ---- keys (order-preserving; see api::key) ----

pub fn k_u64(v: u64) -> Key {
    let mut k = Key::new();
    k.push_u64(v);
    k
}

pub fn k_u64x2(a: u64, b: u64) -> Key {
    let mut k = k_u64(a);
    k.push_u64(b);
    k
}

pub fn k_bytes(b: &[u8]) -> Key {
    Key::from_bytes(b)
}

pub fn k_symb(s: &Symb) -> Key {
    Key::from_bytes(s)
}

pub fn k_u64_symb(a: u64, s: &Symb) -> Key {
    let mut k = k_u64(a);
    k.push_bytes(s);
    k
}

pub fn daily_market_key(s: &Symb, date: u64) -> Key {
    let mut k = k_symb(s);
    k.push_u64(date);
    k
}

pub fn financial_key(co: u64, year: u32, qtr: u32) -> Key {
    let mut k = k_u64(co);
    k.push_u32(year).push_u8(qtr as u8);
    k
}

pub fn competitor_key(co: u64, comp: u64, in_id: &[u8; 2]) -> Key {
    let mut k = k_u64x2(co, comp);
    k.push_bytes(in_id);
    k
}

pub fn charge_key(tt: &Tt, tier: u8) -> Key {
    let mut k = k_bytes(tt);
    k.push_u8(tier);
    k
}

pub fn commission_key(tier: u8, tt: &Tt, ex: &[u8; 6], from_qty: u32) -> Key {
    let mut k = Key::new();
    k.push_u8(tier)
        .push_bytes(tt)
        .push_bytes(ex)
        .push_u32(from_qty);
    k
}

pub fn trade_history_key(t: u64, st: &St) -> Key {
    let mut k = k_u64(t);
    k.push_bytes(st);
    k
}

pub fn account_permission_key(ca: u64, tax: &[u8; 20]) -> Key {
    let mut k = k_u64(ca);
    k.push_bytes(tax);
    k
}

pub fn customer_taxrate_key(c: u64, tx: &[u8; 4]) -> Key {
    let mut k = k_u64(c);
    k.push_bytes(tx);
    k
}

// Secondary index numbers (the order of `with_secondary` calls below).
/// COMPANY: (CO_NAME) unique; (CO_IN_ID, CO_ID) unique.
pub const COMPANY_BY_NAME: u16 = 0;
pub const COMPANY_BY_INDUSTRY: u16 = 1;
/// SECURITY: (S_CO_ID, S_ISSUE) unique.
pub const SECURITY_BY_COMPANY: u16 = 0;
/// INDUSTRY: (IN_NAME) unique; (IN_SC_ID, IN_ID) unique.
pub const INDUSTRY_BY_NAME: u16 = 0;
pub const INDUSTRY_BY_SECTOR: u16 = 1;
/// SECTOR: (SC_NAME) unique.
pub const SECTOR_BY_NAME: u16 = 0;
/// CUSTOMER: (C_TAX_ID), non-unique.
pub const CUSTOMER_BY_TAX_ID: u16 = 0;
/// CUSTOMER_ACCOUNT: (CA_C_ID, CA_ID) unique.
pub const ACCOUNT_BY_CUSTOMER: u16 = 0;
/// HOLDING: (H_CA_ID, H_S_SYMB, H_DTS, H_T_ID) unique.
pub const HOLDING_BY_ACCOUNT: u16 = 0;
/// HOLDING_HISTORY: (HH_T_ID, HH_H_T_ID) unique.
pub const HOLDING_HISTORY_BY_TRADE: u16 = 0;
/// WATCH_LIST: (WL_C_ID, WL_ID) unique.
pub const WATCH_LIST_BY_CUSTOMER: u16 = 0;
/// BROKER: (B_NAME) unique.
pub const BROKER_BY_NAME: u16 = 0;
/// TRADE: (T_CA_ID, T_ID) and (T_S_SYMB, T_ID), unique.
pub const TRADE_BY_ACCOUNT: u16 = 0;
pub const TRADE_BY_SYMBOL: u16 = 1;
/// TRADE_REQUEST: (TR_S_SYMB, TR_T_ID) and (TR_B_ID, TR_S_SYMB, TR_T_ID), unique.
pub const REQUEST_BY_SYMBOL: u16 = 0;
pub const REQUEST_BY_BROKER: u16 = 1;

fn company_name_key_of(r: &[u8], out: &mut Key) {
    let o = offset_of!(Company, co_name);
    out.push_str_fixed(&r[o..o + CO_NAME_KEY], CO_NAME_KEY);
}
fn company_industry_key_of(r: &[u8], out: &mut Key) {
    let o = offset_of!(Company, co_in_id);
    out.push_bytes(&r[o..o + 2])
        .push_u64(field::<u64>(r, offset_of!(Company, co_id)));
}
fn security_company_key_of(r: &[u8], out: &mut Key) {
    let o = offset_of!(Security, s_issue);
    out.push_u64(field::<u64>(r, offset_of!(Security, s_co_id)))
        .push_bytes(&r[o..o + 6]);
}
fn industry_name_key_of(r: &[u8], out: &mut Key) {
    let o = offset_of!(Industry, in_name);
    out.push_bytes(&r[o..o + 50]);
}
fn industry_sector_key_of(r: &[u8], out: &mut Key) {
    let s = offset_of!(Industry, in_sc_id);
    let i = offset_of!(Industry, in_id);
    out.push_bytes(&r[s..s + 2]).push_bytes(&r[i..i + 2]);
}
fn sector_name_key_of(r: &[u8], out: &mut Key) {
    let o = offset_of!(Sector, sc_name);
    out.push_bytes(&r[o..o + 30]);
}
fn customer_tax_key_of(r: &[u8], out: &mut Key) {
    let o = offset_of!(Customer, c_tax_id);
    out.push_bytes(&r[o..o + 20]);
}
fn account_customer_key_of(r: &[u8], out: &mut Key) {
    out.push_u64(field::<u64>(r, offset_of!(CustomerAccount, ca_c_id)))
        .push_u64(field::<u64>(r, offset_of!(CustomerAccount, ca_id)));
}
fn holding_account_key_of(r: &[u8], out: &mut Key) {
    let s = offset_of!(Holding, h_s_symb);
    out.push_u64(field::<u64>(r, offset_of!(Holding, h_ca_id)))
        .push_bytes(&r[s..s + SYMB_LEN])
        .push_u64(field::<u64>(r, offset_of!(Holding, h_dts)))
        .push_u64(field::<u64>(r, offset_of!(Holding, h_t_id)));
}
fn holding_history_trade_key_of(r: &[u8], out: &mut Key) {
    out.push_u64(field::<u64>(r, offset_of!(HoldingHistory, hh_t_id)))
        .push_u64(field::<u64>(r, offset_of!(HoldingHistory, hh_h_t_id)));
}
fn watch_list_customer_key_of(r: &[u8], out: &mut Key) {
    out.push_u64(field::<u64>(r, offset_of!(WatchList, wl_c_id)))
        .push_u64(field::<u64>(r, offset_of!(WatchList, wl_id)));
}
fn broker_name_key_of(r: &[u8], out: &mut Key) {
    let o = offset_of!(Broker, b_name);
    out.push_bytes(&r[o..o + 49]);
}
fn trade_account_key_of(r: &[u8], out: &mut Key) {
    out.push_u64(field::<u64>(r, offset_of!(Trade, t_ca_id)))
        .push_u64(field::<u64>(r, offset_of!(Trade, t_id)));
}
fn trade_symbol_key_of(r: &[u8], out: &mut Key) {
    let s = offset_of!(Trade, t_s_symb);
    out.push_bytes(&r[s..s + SYMB_LEN])
        .push_u64(field::<u64>(r, offset_of!(Trade, t_id)));
}
fn request_symbol_key_of(r: &[u8], out: &mut Key) {
    let s = offset_of!(TradeRequest, tr_s_symb);
    out.push_bytes(&r[s..s + SYMB_LEN])
        .push_u64(field::<u64>(r, offset_of!(TradeRequest, tr_t_id)));
}
fn request_broker_key_of(r: &[u8], out: &mut Key) {
    let s = offset_of!(TradeRequest, tr_s_symb);
    out.push_u64(field::<u64>(r, offset_of!(TradeRequest, tr_b_id)))
        .push_bytes(&r[s..s + SYMB_LEN])
        .push_u64(field::<u64>(r, offset_of!(TradeRequest, tr_t_id)));
}

/// Expected row counts of a database (sizing hints only).
pub struct Sizes {
    pub customers: u64,
    pub accounts: u64,
    pub securities: u64,
    pub companies: u64,
    pub trades: u64,
    pub daily_market: u64,
}

/// The 33 tables, in the order of the `TableId` constants above.
// A table of data (one declaration per table of the schema): exempt from the length lint.
#[allow(clippy::too_many_lines)]
pub fn build(z: &Sizes) -> Schema {
    use IndexKind::{BTree, Hash};
    let mut s = Schema::new();
    let t = |name: &str, size: usize, kind: IndexKind, rows: u64| {
        TableDef::new(name, size, kind, rows.max(1))
    };
    let h = z.accounts * 10;
    let ids = [
        s.add(t("status_type", size_of::<StatusType>(), Hash, 5)),
        s.add(t("trade_type", size_of::<TradeType>(), Hash, 5)),
        s.add(t("taxrate", size_of::<Taxrate>(), Hash, 320)),
        s.add(t("zip_code", size_of::<ZipCode>(), Hash, 14_741)),
        s.add(t(
            "address",
            size_of::<Address>(),
            Hash,
            z.customers + z.companies + 4,
        )),
        s.add(t("exchange", size_of::<Exchange>(), Hash, 4)),
        s.add(t("sector", size_of::<Sector>(), Hash, 12).with_secondary(
            "sector_name",
            true,
            sector_name_key_of,
        )),
        s.add(
            t("industry", size_of::<Industry>(), Hash, 102)
                .with_secondary("industry_name", true, industry_name_key_of)
                .with_secondary("industry_sector", true, industry_sector_key_of),
        ),
        s.add(
            t("company", size_of::<Company>(), Hash, z.companies)
                .with_secondary("company_name", true, company_name_key_of)
                .with_secondary("company_industry", true, company_industry_key_of),
        ),
        s.add(t(
            "company_competitor",
            size_of::<CompanyCompetitor>(),
            BTree,
            z.companies * 3,
        )),
        s.add(
            t("security", size_of::<Security>(), Hash, z.securities).with_secondary(
                "security_company",
                true,
                security_company_key_of,
            ),
        ),
        s.add(t(
            "daily_market",
            size_of::<DailyMarket>(),
            BTree,
            z.daily_market,
        )),
        s.add(t(
            "financial",
            size_of::<Financial>(),
            BTree,
            z.companies * 20,
        )),
        s.add(t("last_trade", size_of::<LastTrade>(), Hash, z.securities)),
        s.add(t("news_item", size_of::<NewsItem>(), Hash, z.companies * 2)),
        s.add(t(
            "news_xref",
            size_of::<NewsXref>(),
            BTree,
            z.companies * 2,
        )),
        s.add(
            t("customer", size_of::<Customer>(), Hash, z.customers).with_secondary(
                "customer_tax_id",
                false,
                customer_tax_key_of,
            ),
        ),
        s.add(
            t(
                "customer_account",
                size_of::<CustomerAccount>(),
                Hash,
                z.accounts,
            )
            .with_secondary("account_customer", true, account_customer_key_of),
        ),
        s.add(t(
            "account_permission",
            size_of::<AccountPermission>(),
            BTree,
            z.accounts * 3 / 2,
        )),
        s.add(t(
            "customer_taxrate",
            size_of::<CustomerTaxrate>(),
            BTree,
            z.customers * 2,
        )),
        s.add(t("holding", size_of::<Holding>(), Hash, h).with_secondary(
            "holding_account",
            true,
            holding_account_key_of,
        )),
        s.add(
            t(
                "holding_history",
                size_of::<HoldingHistory>(),
                BTree,
                z.trades * 2,
            )
            .with_secondary(
                "holding_history_trade",
                true,
                holding_history_trade_key_of,
            ),
        ),
        s.add(t(
            "holding_summary",
            size_of::<HoldingSummary>(),
            BTree,
            z.accounts * 10,
        )),
        s.add(
            t("watch_list", size_of::<WatchList>(), Hash, z.customers).with_secondary(
                "watch_list_customer",
                true,
                watch_list_customer_key_of,
            ),
        ),
        s.add(t(
            "watch_item",
            size_of::<WatchItem>(),
            BTree,
            z.customers * 100,
        )),
        s.add(
            t("broker", size_of::<Broker>(), Hash, z.customers / 100).with_secondary(
                "broker_name",
                true,
                broker_name_key_of,
            ),
        ),
        s.add(t(
            "cash_transaction",
            size_of::<CashTransaction>(),
            Hash,
            z.trades,
        )),
        s.add(t("charge", size_of::<Charge>(), Hash, 15)),
        s.add(t(
            "commission_rate",
            size_of::<CommissionRate>(),
            BTree,
            240,
        )),
        s.add(t("settlement", size_of::<Settlement>(), Hash, z.trades)),
        s.add(
            t("trade", size_of::<Trade>(), BTree, z.trades)
                .with_secondary("trade_account", true, trade_account_key_of)
                .with_secondary("trade_symbol", true, trade_symbol_key_of),
        ),
        s.add(t(
            "trade_history",
            size_of::<TradeHistory>(),
            BTree,
            z.trades * 5 / 2,
        )),
        s.add(
            t(
                "trade_request",
                size_of::<TradeRequest>(),
                BTree,
                z.trades / 100,
            )
            .with_secondary("request_symbol", true, request_symbol_key_of)
            .with_secondary("request_broker", true, request_broker_key_of),
        ),
    ];
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(
            id.0 as usize, i,
            "TPC-E table ids must follow the constants"
        );
        assert_eq!(s.tables[i].name, TABLE_GROUPS[i].0);
    }
    s.tables = s.tables.into_iter().map(typed::declare).collect();
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::row;

    #[test]
    fn thirty_three_tables_in_four_groups() {
        let s = build(&Sizes {
            customers: 1000,
            accounts: 5000,
            securities: 685,
            companies: 500,
            trades: 1000,
            daily_market: 1000,
        });
        assert_eq!(s.tables.len(), 33);
        let count = |g: &str| TABLE_GROUPS.iter().filter(|(_, x)| *x == g).count();
        assert_eq!(
            (
                count("customer"),
                count("broker"),
                count("market"),
                count("dimension")
            ),
            (9, 9, 11, 4)
        );
    }

    #[test]
    fn secondary_keys_read_the_right_fields_and_fit() {
        let mut t = Trade::zeroed();
        t.t_id = 77;
        t.t_ca_id = 5;
        row::set_str(&mut t.t_s_symb, b"ABC");
        let mut k = Key::new();
        trade_account_key_of(row::bytes(&t), &mut k);
        assert_eq!(k, k_u64x2(5, 77));
        let mut k = Key::new();
        trade_symbol_key_of(row::bytes(&t), &mut k);
        let mut want = k_symb(&t.t_s_symb);
        want.push_u64(77);
        assert_eq!(k, want);

        let mut h = Holding::zeroed();
        h.h_ca_id = 9;
        h.h_t_id = 3;
        h.h_dts = 2;
        row::set_str(&mut h.h_s_symb, b"ZZ");
        let mut k = Key::new();
        holding_account_key_of(row::bytes(&h), &mut k);
        let mut want = k_u64_symb(9, &h.h_s_symb);
        want.push_u64(2).push_u64(3);
        assert_eq!(k, want);

        let mut c = Company::zeroed();
        row::set_str(&mut c.co_name, &[b'X'; CO_NAME_KEY]);
        let mut k = Key::new();
        company_name_key_of(row::bytes(&c), &mut k);
        assert!(k.len() <= api::key::MAX_KEY_LEN);
    }
}
