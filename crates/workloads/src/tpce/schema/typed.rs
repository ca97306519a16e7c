//! The typed declarations (`api::typed`) of the 33 TPC-E tables: the specification's
//! clause 2 types over the rows of `super`, and the parts of every key `super` encodes.
//! The built-in engines never read them; adapters to real database systems do.
//!
//! Where the kit's representation differs from the specification, the declaration
//! follows the representation (the row is the truth): rates and ratios keep the scale
//! the kit stores them in, CO_NAME is at most `CO_NAME_KEY` bytes, NI_ITEM is 512 opaque
//! bytes, and BOOLEAN columns are one-byte integers (0 or 1).

use super::*;
use api::typed::SqlType::{Binary, Char, VarChar};
use api::typed::{KeyEnc, Part, SqlType};

/// IDENT_T (NUM(11)) and TRADE_T (NUM(15)): `u64` in rows.
const IDENT: SqlType = SqlType::Int {
    bytes: 8,
    signed: false,
};
/// S_COUNT_T (NUM(12)) and B_NUM_TRADES (NUM(9)): `u64`.
const S_COUNT: SqlType = IDENT;
/// Small NUM(n) integers stored as `u32`.
const NUM_U32: SqlType = SqlType::Int {
    bytes: 4,
    signed: false,
};
/// NUM(1) tiers and tax statuses stored as `u8`.
const NUM_U8: SqlType = SqlType::Int {
    bytes: 1,
    signed: false,
};
/// BOOLEAN in the specification: a `u8` 0 or 1 (no `SqlType` for booleans).
const BOOL: SqlType = NUM_U8;
/// S_QTY_T (NUM(6)) where the row holds a signed `i64` (negative: a short position).
const QTY: SqlType = SqlType::Int {
    bytes: 8,
    signed: true,
};
/// DATE and DATETIME: `u64` microseconds since the Unix epoch.
const DATE: SqlType = SqlType::Timestamp;
/// Money (`i64` cents) of `precision` digits: S_PRICE_T is NUM(8,2), VALUE_T NUM(10,2),
/// BALANCE_T NUM(12,2), FIN_AGG_T NUM(15,2).
const fn money(precision: u8) -> SqlType {
    SqlType::Decimal {
        bytes: 8,
        precision,
        scale: 2,
    }
}
const S_PRICE: SqlType = money(8);
const VALUE: SqlType = money(10);
const BALANCE: SqlType = money(12);
const FIN_AGG: SqlType = money(15);
/// TX_RATE: NUM(6,5) in the specification, a fraction the kit keeps in 1/10,000.
const TAX_RATE: SqlType = SqlType::Decimal {
    bytes: 4,
    precision: 5,
    scale: 4,
};
/// S_YIELD and CR_RATE: NUM(5,2) percents (the kit's 1/10,000 of a unit is 1/100 of a
/// percent, the same integer).
const PERCENT: SqlType = SqlType::Decimal {
    bytes: 4,
    precision: 5,
    scale: 2,
};
const YIELD: SqlType = PERCENT;
const COMM_RATE: SqlType = PERCENT;
/// FI_MARGIN: VALUE_T in the specification; the kit keeps the ratio in 1/10,000.
const MARGIN: SqlType = SqlType::Decimal {
    bytes: 8,
    precision: 12,
    scale: 4,
};
/// Key parts: `u64` ids (big endian), strings as their fixed-width bytes.
fn id(name: &'static str) -> Part {
    Part::col(name, KeyEnc::U64)
}
fn fixed(name: &'static str, n: u16) -> Part {
    Part::col(name, KeyEnc::Fixed(n))
}

const C2: SqlType = SqlType::Char(2);
const C3: SqlType = SqlType::Char(3);
const C4: SqlType = SqlType::Char(4);
const SYMB: SqlType = SqlType::Char(SYMB_LEN as u16);
const SYMB_KEY: u16 = SYMB_LEN as u16;
/// CO_NAME: VARCHAR(60) in the specification, but generated names are at most
/// `CO_NAME_KEY` bytes (the field's tail stays zero), all of which the name index keys.
const CO_NAME: SqlType = VarChar(CO_NAME_KEY as u16);

/// `t` with its typed columns and keys declared (found by its name).
// A table of data (one declaration per table of the schema): exempt from the length lint.
#[allow(clippy::too_many_lines)]
pub(super) fn declare(t: TableDef) -> TableDef {
    match t.name.as_str() {
        "status_type" => t
            .columns(&[
                ("st_id", C4, offset_of!(StatusType, st_id)),
                ("st_name", Char(10), offset_of!(StatusType, st_name)),
            ])
            .primary_key(&[fixed("st_id", 4)]),
        "trade_type" => t
            .columns(&[
                ("tt_id", C3, offset_of!(TradeType, tt_id)),
                ("tt_name", VarChar(12), offset_of!(TradeType, tt_name)),
                ("tt_is_sell", BOOL, offset_of!(TradeType, tt_is_sell)),
                ("tt_is_mrkt", BOOL, offset_of!(TradeType, tt_is_mrkt)),
            ])
            .primary_key(&[fixed("tt_id", 3)]),
        "taxrate" => t
            .columns(&[
                ("tx_id", C4, offset_of!(Taxrate, tx_id)),
                ("tx_name", VarChar(50), offset_of!(Taxrate, tx_name)),
                ("tx_rate", TAX_RATE, offset_of!(Taxrate, tx_rate)),
            ])
            .primary_key(&[fixed("tx_id", 4)]),
        "zip_code" => t
            .columns(&[
                ("zc_code", Char(12), offset_of!(ZipCode, zc_code)),
                ("zc_town", VarChar(80), offset_of!(ZipCode, zc_town)),
                ("zc_div", VarChar(80), offset_of!(ZipCode, zc_div)),
            ])
            .primary_key(&[fixed("zc_code", 12)]),
        "address" => t
            .columns(&[
                ("ad_id", IDENT, offset_of!(Address, ad_id)),
                ("ad_line1", VarChar(80), offset_of!(Address, ad_line1)),
                ("ad_line2", VarChar(80), offset_of!(Address, ad_line2)),
                ("ad_zc_code", Char(12), offset_of!(Address, ad_zc_code)),
                ("ad_ctry", VarChar(80), offset_of!(Address, ad_ctry)),
            ])
            .primary_key(&[id("ad_id")]),
        "exchange" => t
            .columns(&[
                ("ex_id", Char(6), offset_of!(Exchange, ex_id)),
                ("ex_name", VarChar(100), offset_of!(Exchange, ex_name)),
                ("ex_num_symb", NUM_U32, offset_of!(Exchange, ex_num_symb)),
                ("ex_open", NUM_U32, offset_of!(Exchange, ex_open)),
                ("ex_close", NUM_U32, offset_of!(Exchange, ex_close)),
                ("ex_desc", VarChar(150), offset_of!(Exchange, ex_desc)),
                ("ex_ad_id", IDENT, offset_of!(Exchange, ex_ad_id)),
            ])
            .primary_key(&[fixed("ex_id", 6)]),
        "sector" => t
            .columns(&[
                ("sc_id", C2, offset_of!(Sector, sc_id)),
                ("sc_name", VarChar(30), offset_of!(Sector, sc_name)),
            ])
            .primary_key(&[fixed("sc_id", 2)])
            .secondary_key("sector_name", &[fixed("sc_name", 30)]),
        "industry" => t
            .columns(&[
                ("in_id", C2, offset_of!(Industry, in_id)),
                ("in_name", VarChar(50), offset_of!(Industry, in_name)),
                ("in_sc_id", C2, offset_of!(Industry, in_sc_id)),
            ])
            .primary_key(&[fixed("in_id", 2)])
            .secondary_key("industry_name", &[fixed("in_name", 50)])
            .secondary_key(
                "industry_sector",
                &[fixed("in_sc_id", 2), fixed("in_id", 2)],
            ),
        "company" => t
            .columns(&[
                ("co_id", IDENT, offset_of!(Company, co_id)),
                ("co_st_id", C4, offset_of!(Company, co_st_id)),
                ("co_name", CO_NAME, offset_of!(Company, co_name)),
                ("co_in_id", C2, offset_of!(Company, co_in_id)),
                ("co_sp_rate", C4, offset_of!(Company, co_sp_rate)),
                ("co_ceo", VarChar(46), offset_of!(Company, co_ceo)),
                ("co_ad_id", IDENT, offset_of!(Company, co_ad_id)),
                ("co_desc", VarChar(150), offset_of!(Company, co_desc)),
                ("co_open_date", DATE, offset_of!(Company, co_open_date)),
            ])
            .primary_key(&[id("co_id")])
            .secondary_key("company_name", &[fixed("co_name", CO_NAME_KEY as u16)])
            .secondary_key("company_industry", &[fixed("co_in_id", 2), id("co_id")]),
        "company_competitor" => t
            .columns(&[
                ("cp_co_id", IDENT, offset_of!(CompanyCompetitor, cp_co_id)),
                (
                    "cp_comp_co_id",
                    IDENT,
                    offset_of!(CompanyCompetitor, cp_comp_co_id),
                ),
                ("cp_in_id", C2, offset_of!(CompanyCompetitor, cp_in_id)),
            ])
            .primary_key(&[id("cp_co_id"), id("cp_comp_co_id"), fixed("cp_in_id", 2)]),
        "security" => t
            .columns(&[
                ("s_symb", SYMB, offset_of!(Security, s_symb)),
                ("s_issue", Char(6), offset_of!(Security, s_issue)),
                ("s_st_id", C4, offset_of!(Security, s_st_id)),
                ("s_name", VarChar(70), offset_of!(Security, s_name)),
                ("s_ex_id", Char(6), offset_of!(Security, s_ex_id)),
                ("s_co_id", IDENT, offset_of!(Security, s_co_id)),
                ("s_num_out", S_COUNT, offset_of!(Security, s_num_out)),
                ("s_start_date", DATE, offset_of!(Security, s_start_date)),
                ("s_exch_date", DATE, offset_of!(Security, s_exch_date)),
                ("s_pe", VALUE, offset_of!(Security, s_pe)),
                ("s_52wk_high", S_PRICE, offset_of!(Security, s_52wk_high)),
                (
                    "s_52wk_high_date",
                    DATE,
                    offset_of!(Security, s_52wk_high_date),
                ),
                ("s_52wk_low", S_PRICE, offset_of!(Security, s_52wk_low)),
                (
                    "s_52wk_low_date",
                    DATE,
                    offset_of!(Security, s_52wk_low_date),
                ),
                ("s_dividend", VALUE, offset_of!(Security, s_dividend)),
                ("s_yield", YIELD, offset_of!(Security, s_yield)),
            ])
            .primary_key(&[fixed("s_symb", SYMB_KEY)])
            .secondary_key("security_company", &[id("s_co_id"), fixed("s_issue", 6)]),
        "daily_market" => t
            .columns(&[
                ("dm_date", DATE, offset_of!(DailyMarket, dm_date)),
                ("dm_s_symb", SYMB, offset_of!(DailyMarket, dm_s_symb)),
                ("dm_close", S_PRICE, offset_of!(DailyMarket, dm_close)),
                ("dm_high", S_PRICE, offset_of!(DailyMarket, dm_high)),
                ("dm_low", S_PRICE, offset_of!(DailyMarket, dm_low)),
                ("dm_vol", S_COUNT, offset_of!(DailyMarket, dm_vol)),
            ])
            .primary_key(&[fixed("dm_s_symb", SYMB_KEY), id("dm_date")]),
        "financial" => t
            .columns(&[
                ("fi_co_id", IDENT, offset_of!(Financial, fi_co_id)),
                ("fi_year", NUM_U32, offset_of!(Financial, fi_year)),
                ("fi_qtr", NUM_U32, offset_of!(Financial, fi_qtr)),
                (
                    "fi_qtr_start_date",
                    DATE,
                    offset_of!(Financial, fi_qtr_start_date),
                ),
                ("fi_revenue", FIN_AGG, offset_of!(Financial, fi_revenue)),
                ("fi_net_earn", FIN_AGG, offset_of!(Financial, fi_net_earn)),
                ("fi_basic_eps", VALUE, offset_of!(Financial, fi_basic_eps)),
                ("fi_dilut_eps", VALUE, offset_of!(Financial, fi_dilut_eps)),
                ("fi_margin", MARGIN, offset_of!(Financial, fi_margin)),
                ("fi_inventory", FIN_AGG, offset_of!(Financial, fi_inventory)),
                ("fi_assets", FIN_AGG, offset_of!(Financial, fi_assets)),
                ("fi_liability", FIN_AGG, offset_of!(Financial, fi_liability)),
                ("fi_out_basic", S_COUNT, offset_of!(Financial, fi_out_basic)),
                ("fi_out_dilut", S_COUNT, offset_of!(Financial, fi_out_dilut)),
            ])
            .primary_key(&[
                id("fi_co_id"),
                Part::col("fi_year", KeyEnc::U32),
                Part::col("fi_qtr", KeyEnc::U8),
            ]),
        "last_trade" => t
            .columns(&[
                ("lt_s_symb", SYMB, offset_of!(LastTrade, lt_s_symb)),
                ("lt_dts", DATE, offset_of!(LastTrade, lt_dts)),
                ("lt_price", S_PRICE, offset_of!(LastTrade, lt_price)),
                (
                    "lt_open_price",
                    S_PRICE,
                    offset_of!(LastTrade, lt_open_price),
                ),
                ("lt_vol", S_COUNT, offset_of!(LastTrade, lt_vol)),
            ])
            .primary_key(&[fixed("lt_s_symb", SYMB_KEY)]),
        "news_item" => t
            .columns(&[
                ("ni_id", IDENT, offset_of!(NewsItem, ni_id)),
                (
                    "ni_headline",
                    VarChar(80),
                    offset_of!(NewsItem, ni_headline),
                ),
                ("ni_summary", VarChar(255), offset_of!(NewsItem, ni_summary)),
                (
                    "ni_item",
                    Binary(NI_ITEM_LEN as u16),
                    offset_of!(NewsItem, ni_item),
                ),
                ("ni_dts", DATE, offset_of!(NewsItem, ni_dts)),
                ("ni_source", VarChar(30), offset_of!(NewsItem, ni_source)),
                ("ni_author", VarChar(30), offset_of!(NewsItem, ni_author)),
            ])
            .primary_key(&[id("ni_id")]),
        "news_xref" => t
            .columns(&[
                ("nx_ni_id", IDENT, offset_of!(NewsXref, nx_ni_id)),
                ("nx_co_id", IDENT, offset_of!(NewsXref, nx_co_id)),
            ])
            .primary_key(&[id("nx_co_id"), id("nx_ni_id")]),
        "customer" => {
            let phone = offset_of!(Customer, c_phone);
            t.columns(&[
                ("c_id", IDENT, offset_of!(Customer, c_id)),
                ("c_tax_id", VarChar(20), offset_of!(Customer, c_tax_id)),
                ("c_st_id", C4, offset_of!(Customer, c_st_id)),
                ("c_l_name", VarChar(25), offset_of!(Customer, c_l_name)),
                ("c_f_name", VarChar(20), offset_of!(Customer, c_f_name)),
                ("c_m_name", Char(1), offset_of!(Customer, c_m_name)),
                ("c_gndr", Char(1), offset_of!(Customer, c_gndr)),
                ("c_tier", NUM_U8, offset_of!(Customer, c_tier)),
                ("c_dob", DATE, offset_of!(Customer, c_dob)),
                ("c_ad_id", IDENT, offset_of!(Customer, c_ad_id)),
                ("c_ctry_1", VarChar(3), phone + offset_of!(Phone, ctry)),
                ("c_area_1", VarChar(3), phone + offset_of!(Phone, area)),
                ("c_local_1", VarChar(10), phone + offset_of!(Phone, local)),
                ("c_ext_1", VarChar(5), phone + offset_of!(Phone, ext)),
                (
                    "c_ctry_2",
                    VarChar(3),
                    phone + size_of::<Phone>() + offset_of!(Phone, ctry),
                ),
                (
                    "c_area_2",
                    VarChar(3),
                    phone + size_of::<Phone>() + offset_of!(Phone, area),
                ),
                (
                    "c_local_2",
                    VarChar(10),
                    phone + size_of::<Phone>() + offset_of!(Phone, local),
                ),
                (
                    "c_ext_2",
                    VarChar(5),
                    phone + size_of::<Phone>() + offset_of!(Phone, ext),
                ),
                (
                    "c_ctry_3",
                    VarChar(3),
                    phone + 2 * size_of::<Phone>() + offset_of!(Phone, ctry),
                ),
                (
                    "c_area_3",
                    VarChar(3),
                    phone + 2 * size_of::<Phone>() + offset_of!(Phone, area),
                ),
                (
                    "c_local_3",
                    VarChar(10),
                    phone + 2 * size_of::<Phone>() + offset_of!(Phone, local),
                ),
                (
                    "c_ext_3",
                    VarChar(5),
                    phone + 2 * size_of::<Phone>() + offset_of!(Phone, ext),
                ),
                ("c_email_1", VarChar(50), offset_of!(Customer, c_email_1)),
                ("c_email_2", VarChar(50), offset_of!(Customer, c_email_2)),
            ])
            .primary_key(&[id("c_id")])
            .secondary_key("customer_tax_id", &[fixed("c_tax_id", 20)])
        }
        "customer_account" => t
            .columns(&[
                ("ca_id", IDENT, offset_of!(CustomerAccount, ca_id)),
                ("ca_b_id", IDENT, offset_of!(CustomerAccount, ca_b_id)),
                ("ca_c_id", IDENT, offset_of!(CustomerAccount, ca_c_id)),
                ("ca_name", VarChar(50), offset_of!(CustomerAccount, ca_name)),
                ("ca_tax_st", NUM_U8, offset_of!(CustomerAccount, ca_tax_st)),
                ("ca_bal", BALANCE, offset_of!(CustomerAccount, ca_bal)),
            ])
            .primary_key(&[id("ca_id")])
            .secondary_key("account_customer", &[id("ca_c_id"), id("ca_id")]),
        "account_permission" => t
            .columns(&[
                ("ap_ca_id", IDENT, offset_of!(AccountPermission, ap_ca_id)),
                ("ap_acl", C4, offset_of!(AccountPermission, ap_acl)),
                (
                    "ap_tax_id",
                    VarChar(20),
                    offset_of!(AccountPermission, ap_tax_id),
                ),
                (
                    "ap_l_name",
                    VarChar(25),
                    offset_of!(AccountPermission, ap_l_name),
                ),
                (
                    "ap_f_name",
                    VarChar(20),
                    offset_of!(AccountPermission, ap_f_name),
                ),
            ])
            .primary_key(&[id("ap_ca_id"), fixed("ap_tax_id", 20)]),
        "customer_taxrate" => t
            .columns(&[
                ("cx_tx_id", C4, offset_of!(CustomerTaxrate, cx_tx_id)),
                ("cx_c_id", IDENT, offset_of!(CustomerTaxrate, cx_c_id)),
            ])
            .primary_key(&[id("cx_c_id"), fixed("cx_tx_id", 4)]),
        "holding" => t
            .columns(&[
                ("h_t_id", IDENT, offset_of!(Holding, h_t_id)),
                ("h_ca_id", IDENT, offset_of!(Holding, h_ca_id)),
                ("h_s_symb", SYMB, offset_of!(Holding, h_s_symb)),
                ("h_dts", DATE, offset_of!(Holding, h_dts)),
                ("h_price", S_PRICE, offset_of!(Holding, h_price)),
                ("h_qty", QTY, offset_of!(Holding, h_qty)),
            ])
            .primary_key(&[id("h_t_id")])
            .secondary_key(
                "holding_account",
                &[
                    id("h_ca_id"),
                    fixed("h_s_symb", SYMB_KEY),
                    id("h_dts"),
                    id("h_t_id"),
                ],
            ),
        "holding_history" => t
            .columns(&[
                ("hh_h_t_id", IDENT, offset_of!(HoldingHistory, hh_h_t_id)),
                ("hh_t_id", IDENT, offset_of!(HoldingHistory, hh_t_id)),
                (
                    "hh_before_qty",
                    QTY,
                    offset_of!(HoldingHistory, hh_before_qty),
                ),
                (
                    "hh_after_qty",
                    QTY,
                    offset_of!(HoldingHistory, hh_after_qty),
                ),
            ])
            .primary_key(&[id("hh_h_t_id"), id("hh_t_id")])
            .secondary_key("holding_history_trade", &[id("hh_t_id"), id("hh_h_t_id")]),
        "holding_summary" => t
            .columns(&[
                ("hs_ca_id", IDENT, offset_of!(HoldingSummary, hs_ca_id)),
                ("hs_s_symb", SYMB, offset_of!(HoldingSummary, hs_s_symb)),
                ("hs_qty", QTY, offset_of!(HoldingSummary, hs_qty)),
            ])
            .primary_key(&[id("hs_ca_id"), fixed("hs_s_symb", SYMB_KEY)]),
        "watch_list" => t
            .columns(&[
                ("wl_id", IDENT, offset_of!(WatchList, wl_id)),
                ("wl_c_id", IDENT, offset_of!(WatchList, wl_c_id)),
            ])
            .primary_key(&[id("wl_id")])
            .secondary_key("watch_list_customer", &[id("wl_c_id"), id("wl_id")]),
        "watch_item" => t
            .columns(&[
                ("wi_wl_id", IDENT, offset_of!(WatchItem, wi_wl_id)),
                ("wi_s_symb", SYMB, offset_of!(WatchItem, wi_s_symb)),
            ])
            .primary_key(&[id("wi_wl_id"), fixed("wi_s_symb", SYMB_KEY)]),
        "broker" => t
            .columns(&[
                ("b_id", IDENT, offset_of!(Broker, b_id)),
                ("b_st_id", C4, offset_of!(Broker, b_st_id)),
                ("b_name", VarChar(49), offset_of!(Broker, b_name)),
                ("b_num_trades", S_COUNT, offset_of!(Broker, b_num_trades)),
                ("b_comm_total", BALANCE, offset_of!(Broker, b_comm_total)),
            ])
            .primary_key(&[id("b_id")])
            .secondary_key("broker_name", &[fixed("b_name", 49)]),
        "cash_transaction" => t
            .columns(&[
                ("ct_t_id", IDENT, offset_of!(CashTransaction, ct_t_id)),
                ("ct_dts", DATE, offset_of!(CashTransaction, ct_dts)),
                ("ct_amt", VALUE, offset_of!(CashTransaction, ct_amt)),
                (
                    "ct_name",
                    VarChar(100),
                    offset_of!(CashTransaction, ct_name),
                ),
            ])
            .primary_key(&[id("ct_t_id")]),
        "charge" => t
            .columns(&[
                ("ch_tt_id", C3, offset_of!(Charge, ch_tt_id)),
                ("ch_c_tier", NUM_U8, offset_of!(Charge, ch_c_tier)),
                ("ch_chrg", VALUE, offset_of!(Charge, ch_chrg)),
            ])
            .primary_key(&[fixed("ch_tt_id", 3), Part::col("ch_c_tier", KeyEnc::U8)]),
        "commission_rate" => t
            .columns(&[
                ("cr_c_tier", NUM_U8, offset_of!(CommissionRate, cr_c_tier)),
                ("cr_tt_id", C3, offset_of!(CommissionRate, cr_tt_id)),
                ("cr_ex_id", Char(6), offset_of!(CommissionRate, cr_ex_id)),
                (
                    "cr_from_qty",
                    NUM_U32,
                    offset_of!(CommissionRate, cr_from_qty),
                ),
                ("cr_to_qty", NUM_U32, offset_of!(CommissionRate, cr_to_qty)),
                ("cr_rate", COMM_RATE, offset_of!(CommissionRate, cr_rate)),
            ])
            .primary_key(&[
                Part::col("cr_c_tier", KeyEnc::U8),
                fixed("cr_tt_id", 3),
                fixed("cr_ex_id", 6),
                Part::col("cr_from_qty", KeyEnc::U32),
            ]),
        "settlement" => t
            .columns(&[
                ("se_t_id", IDENT, offset_of!(Settlement, se_t_id)),
                (
                    "se_cash_type",
                    VarChar(40),
                    offset_of!(Settlement, se_cash_type),
                ),
                (
                    "se_cash_due_date",
                    DATE,
                    offset_of!(Settlement, se_cash_due_date),
                ),
                ("se_amt", VALUE, offset_of!(Settlement, se_amt)),
            ])
            .primary_key(&[id("se_t_id")]),
        "trade" => t
            .columns(&[
                ("t_id", IDENT, offset_of!(Trade, t_id)),
                ("t_dts", DATE, offset_of!(Trade, t_dts)),
                ("t_st_id", C4, offset_of!(Trade, t_st_id)),
                ("t_tt_id", C3, offset_of!(Trade, t_tt_id)),
                ("t_is_cash", BOOL, offset_of!(Trade, t_is_cash)),
                ("t_s_symb", SYMB, offset_of!(Trade, t_s_symb)),
                ("t_qty", NUM_U32, offset_of!(Trade, t_qty)),
                ("t_bid_price", S_PRICE, offset_of!(Trade, t_bid_price)),
                ("t_ca_id", IDENT, offset_of!(Trade, t_ca_id)),
                ("t_exec_name", VarChar(49), offset_of!(Trade, t_exec_name)),
                ("t_trade_price", S_PRICE, offset_of!(Trade, t_trade_price)),
                ("t_chrg", VALUE, offset_of!(Trade, t_chrg)),
                ("t_comm", VALUE, offset_of!(Trade, t_comm)),
                ("t_tax", VALUE, offset_of!(Trade, t_tax)),
                ("t_lifo", BOOL, offset_of!(Trade, t_lifo)),
            ])
            .primary_key(&[id("t_id")])
            .secondary_key("trade_account", &[id("t_ca_id"), id("t_id")])
            .secondary_key("trade_symbol", &[fixed("t_s_symb", SYMB_KEY), id("t_id")]),
        "trade_history" => t
            .columns(&[
                ("th_t_id", IDENT, offset_of!(TradeHistory, th_t_id)),
                ("th_dts", DATE, offset_of!(TradeHistory, th_dts)),
                ("th_st_id", C4, offset_of!(TradeHistory, th_st_id)),
            ])
            .primary_key(&[id("th_t_id"), fixed("th_st_id", 4)]),
        "trade_request" => t
            .columns(&[
                ("tr_t_id", IDENT, offset_of!(TradeRequest, tr_t_id)),
                ("tr_tt_id", C3, offset_of!(TradeRequest, tr_tt_id)),
                ("tr_s_symb", SYMB, offset_of!(TradeRequest, tr_s_symb)),
                ("tr_qty", NUM_U32, offset_of!(TradeRequest, tr_qty)),
                (
                    "tr_bid_price",
                    S_PRICE,
                    offset_of!(TradeRequest, tr_bid_price),
                ),
                ("tr_b_id", IDENT, offset_of!(TradeRequest, tr_b_id)),
            ])
            .primary_key(&[id("tr_t_id")])
            .secondary_key(
                "request_symbol",
                &[fixed("tr_s_symb", SYMB_KEY), id("tr_t_id")],
            )
            .secondary_key(
                "request_broker",
                &[id("tr_b_id"), fixed("tr_s_symb", SYMB_KEY), id("tr_t_id")],
            ),
        other => panic!("TPC-E table {other} has no typed declaration"),
    }
}
