# SPDX-License-Identifier: MIT
# One Markdown table row for bench/run.sh (tbl_end), and when the row has a
# target a second line "TARGET<tab>MEASURED<tab>MET" for the summary.
# Variables: label, st
# (ok | over | na), wall, peak, runs, why (the n/a reason or the bound),
# note, refst/refwall (the table's wsnap row), target (KIND:THRESHOLD:TEXT).

function fmtw(w) { return w >= 10 ? sprintf("%.1f", w) : sprintf("%.3f", w) }
function fmtr(r) {
	if (r >= 100) return sprintf("%.0f", r)
	if (r >= 10) return sprintf("%.1f", r)
	return sprintf("%.2f", r)
}
function cell(s) { gsub(/\|/, "/", s); return s }

BEGIN {
	pcell = "-"; rcell = "-"; tcell = ""; met = ""
	if (st == "ok") {
		wcell = fmtw(wall)
		if (peak != "") pcell = sprintf("%.1f", peak)
	} else if (st == "over") {
		wcell = "over " why " s"
	} else {
		wcell = "n/a (" why ")"
	}
	if (st != "ok" && peak != "") pcell = sprintf("%.1f", peak)
	has = 0; lower = 0
	if (refst == "ok" && refwall > 0) {
		if (st == "ok") {
			ratio = wall / refwall; has = 1; rcell = fmtr(ratio)
		} else if (st == "over") {
			ratio = why / refwall; has = 1; lower = 1
			rcell = "> " fmtr(ratio)
		}
	}
	if (target != "") {
		n = split(target, t, ":")
		kind = t[1]; th = t[2] + 0
		text = substr(target, length(t[1]) + length(t[2]) + 3)
		if (kind == "ratio_ge") {
			tcell = text " (ratio >= " t[2] ")"
			if (!has) met = "not measured"
			else if (ratio >= th) met = "yes"
			else if (lower) met = "unknown"
			else met = "NO"
		} else if (kind == "wall_lt") {
			tcell = text
			if (st == "ok") met = wall < th ? "yes" : "NO"
			else if (st == "over") met = "NO"
			else met = "not measured"
		} else if (kind == "peak_lt") {
			tcell = text
			if (peak != "") met = peak + 0 < th ? "yes" : "NO"
			else met = "not measured"
		}
	}
	if (note != "") label = label " (" note ")"
	printf "| %s | %s | %s | %s | %s | %s | %s |\n", cell(label), cell(wcell),
	    pcell, rcell, cell(tcell), met, runs
	# Second line, for the summary of targets: target, measured, met.
	if (target != "") {
		if (kind == "ratio_ge") measured = "ratio " rcell
		else if (kind == "wall_lt") measured = wcell
		else measured = pcell " MiB"
		printf "%s\t%s\t%s\n", cell(tcell), cell(measured), met
	}
}
