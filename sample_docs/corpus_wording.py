"""Wording pools for the "varied" and "unseen2" notices of make_corpus.py, as data.

Each field has labels per language as publishers print them, in two disjoint pools: ``SEEN``
(the "varied" split, read while the extractor's rules were written) and ``HELD_OUT`` (the
"unseen2" split, written down before those rules changed and never used to tune them). A
held-out notice draws every label, date format and amount format from ``HELD_OUT``, so it
measures wording the rules have not met, not merely new values.
"""

from __future__ import annotations

Pool = dict[str, dict[str, tuple[str, ...]]]

SEEN: Pool = {
    "title": {
        "en": (
            "Title",
            "Title of the contract",
            "Contract title",
            "Object of the contract",
            "Subject",
            "Name of the project",
            "Project title",
            "Project",
            "Tender title",
        ),
        "de": (
            "Bezeichnung des Auftrags",
            "Gegenstand der Leistung",
            "Titel",
            "Auftragsgegenstand",
            "Bezeichnung",
        ),
        "fr": (
            "Objet du marché",
            "Intitulé du marché",
            "Objet",
            "Intitulé",
            "Objet de la consultation",
        ),
    },
    "authority": {
        "en": (
            "Official name",
            "Contracting authority",
            "Buyer",
            "Issued by",
            "Name of the contracting authority",
            "Purchaser",
            "Awarding body",
        ),
        "de": (
            "Öffentlicher Auftraggeber",
            "Auftraggeber",
            "Vergabestelle",
            "Name des Auftraggebers",
        ),
        "fr": (
            "Nom complet de l'acheteur",
            "Acheteur",
            "Pouvoir adjudicateur",
            "Nom et adresse officiels de l'acheteur",
        ),
    },
    "reference": {
        "en": (
            "Reference number",
            "Reference",
            "Internal identifier",
            "Tender reference",
            "Our ref.",
            "Solicitation No.",
        ),
        "de": ("Vergabenummer", "Aktenzeichen", "Vergabe-Nr.", "Az."),
        "fr": ("Numéro de référence", "Référence acheteur", "Référence du marché"),
    },
    "deadline": {
        "en": (
            "Time limit for receipt of tenders",
            "Closing date",
            "Tenders must be received by",
            "Deadline for receipt of tenders",
            "Tender submission deadline",
            "Closing date and time",
            "Submission deadline",
        ),
        "de": (
            "Schlusstermin für den Eingang der Angebote",
            "Angebotsfrist",
            "Ablauf der Angebotsfrist",
            "Frist für den Eingang der Angebote",
        ),
        "fr": (
            "Date limite de réception des offres",
            "Date et heure limites de réception des offres",
            "Date limite de remise des offres",
        ),
    },
    "value": {
        "en": (
            "Estimated total value",
            "Estimated value",
            "Total value (estimated)",
            "Value excluding VAT",
            "Estimated contract value",
            "Budget",
        ),
        "de": ("Geschätzter Auftragswert", "Geschätzter Gesamtwert", "Auftragswert"),
        "fr": ("Valeur estimée hors TVA", "Valeur totale estimée", "Montant estimé"),
    },
    "lot_value": {
        "en": ("Estimated value", "Lot value", "Value excluding VAT", "Estimated lot value"),
        "de": ("Geschätzter Wert", "Wert des Loses", "Auftragswert"),
        "fr": ("Montant estimé", "Valeur estimée du lot", "Valeur estimée hors TVA"),
    },
    "email": {
        "en": ("E-mail", "Email", "Contact email"),
        "de": ("E-Mail", "Kontakt"),
        "fr": ("Courriel", "Adresse électronique"),
    },
    "cpv": {
        "en": ("Main CPV code", "CPV code", "CPV classifications"),
        "de": ("CPV-Code", "CPV-Codes"),
        "fr": ("Code CPV principal", "Classification CPV"),
    },
    # Distractors: what sits beside the true values and must not be taken for them.
    "notice_id": {
        "en": ("Publication number", "Notice number", "Notice ID", "OCID"),
        "de": ("Bekanntmachungs-ID", "Veröffentlichungsnummer"),
        "fr": ("Avis n°", "Identifiant de l'avis"),
    },
    "publication": {
        "en": ("Publication date", "Date of dispatch of this notice", "Published"),
        "de": ("Veröffentlichungsdatum", "Tag der Absendung"),
        "fr": ("Date d'envoi du présent avis", "Date de publication"),
    },
    "questions": {
        "en": ("Deadline for clarification questions", "Questions must be received by"),
        "de": ("Fragen zu den Vergabeunterlagen bis", "Frist für Bieterfragen"),
        "fr": ("Date limite de remise des questions", "Date limite des demandes de renseignements"),
    },
    "opening": {
        "en": ("Opening of tenders", "Date of opening"),
        "de": ("Eröffnungstermin", "Öffnung der Angebote"),
        "fr": ("Ouverture des plis", "Date d'ouverture des offres"),
    },
    "turnover": {
        "en": ("Minimum annual turnover", "Minimum yearly turnover required"),
        "de": ("Mindestumsatz pro Jahr", "Jahresumsatz mindestens"),
        "fr": ("Chiffre d'affaires annuel minimum", "Chiffre d'affaires minimal"),
    },
    "guarantee": {
        "en": ("Performance guarantee", "Tender guarantee"),
        "de": ("Vertragserfüllungsbürgschaft", "Sicherheitsleistung"),
        "fr": ("Garantie à première demande", "Retenue de garantie"),
    },
    "incl_vat": {
        "en": ("Value including VAT", "Estimated value incl. VAT"),
        "de": ("Auftragswert brutto", "Gesamtwert brutto"),
        "fr": ("Montant TTC estimé", "Valeur estimée TTC"),
    },
    "support": {
        "en": ("Technical support for the portal", "Platform helpdesk"),
        "de": ("Technische Unterstützung der Vergabeplattform", "Support der Plattform"),
        "fr": ("Assistance technique du profil d'acheteur", "Support de la plateforme"),
    },
    "review": {
        "en": ("Review body", "Body responsible for appeal procedures"),
        "de": ("Nachprüfungsstelle", "Vergabekammer"),
        "fr": ("Instance chargée des procédures de recours", "Tribunal administratif"),
    },
    "dates": {
        "en": ("dmy_slash", "d_month_y_at", "hm_on_weekday", "month_d_y_pm", "two_lines", "iso"),
        "de": ("de_dots", "de_um", "de_month"),
        "fr": ("fr_month", "fr_slash", "fr_le_jour"),
    },
    "amounts": {
        "en": ("code_pre", "symbol_pre", "code_post", "million", "thousand_k"),
        "de": ("de_code_post", "de_euro_netto", "de_code_pre", "de_mio"),
        "fr": ("fr_euro_ht", "fr_euros_ht", "fr_million"),
    },
}

HELD_OUT: Pool = {
    "title": {
        "en": ("Name of contract", "Procurement title", "Project name", "Short title"),
        "de": ("Gegenstand des Auftrags", "Kurzbezeichnung", "Leistungsbezeichnung"),
        "fr": ("Titre du marché", "Intitulé de la consultation", "Désignation du marché"),
    },
    "authority": {
        "en": ("Procuring entity", "Contracting entity", "Organisation name", "Buyer name"),
        "de": ("Ausschreibende Stelle", "Auftraggeberin", "Zur Angebotsabgabe auffordernde Stelle"),
        "fr": ("Entité adjudicatrice", "Maître d'ouvrage", "Organisme acheteur"),
    },
    "reference": {
        "en": ("File reference", "Procurement reference", "Contract number", "Tender ID"),
        "de": ("Geschäftszeichen", "Ausschreibungsnummer", "Vorgangsnummer"),
        "fr": ("Référence de la consultation", "Numéro du marché", "N° de consultation"),
    },
    "deadline": {
        "en": (
            "Latest date for submission",
            "Return date for tenders",
            "Bids must be submitted no later than",
            "Date and time for receipt of bids",
            "Responses due by",
        ),
        "de": ("Einreichungsfrist", "Ende der Angebotsfrist", "Angebote sind einzureichen bis"),
        "fr": (
            "Date limite de dépôt des offres",
            "Remise des offres",
            "Date limite de réception des plis",
        ),
    },
    "value": {
        "en": ("Approximate value of the contract", "Indicative budget", "Expected contract value"),
        "de": ("Voraussichtlicher Auftragswert", "Kostenschätzung"),
        "fr": ("Estimation du marché", "Montant prévisionnel", "Budget prévisionnel"),
    },
    "lot_value": {
        "en": ("Approximate lot value", "Lot budget"),
        "de": ("Voraussichtlicher Wert des Loses", "Schätzwert"),
        "fr": ("Estimation du lot", "Montant prévisionnel du lot"),
    },
    "email": {
        "en": ("Enquiries to", "E-mail address"),
        "de": ("E-Mail-Adresse", "Ansprechpartner"),
        "fr": ("Mél", "Adresse de courrier électronique"),
    },
    "cpv": {
        "en": ("CPV", "Classification (CPV)"),
        "de": ("Hauptgegenstand (CPV)", "CPV-Nummer"),
        "fr": ("Codes CPV", "Nomenclature CPV"),
    },
    "notice_id": {
        "en": ("Tender notice no.", "Publication reference"),
        "de": ("Bekanntmachungsnummer", "ID der Bekanntmachung"),
        "fr": ("N° d'annonce", "Référence de l'avis"),
    },
    "publication": {
        "en": ("Date of publication", "Notice issued on"),
        "de": ("Datum der Veröffentlichung", "Bekanntmachung vom"),
        "fr": ("Date de mise en ligne", "Avis publié le"),
    },
    "questions": {
        "en": ("Last date for questions", "Clarification deadline"),
        "de": ("Bieterfragen bis", "Rückfragen bis spätestens"),
        "fr": ("Questions jusqu'au", "Date limite des questions"),
    },
    "opening": {
        "en": ("Bid opening", "Tenders will be opened on"),
        "de": ("Submissionstermin", "Angebotsöffnung"),
        "fr": ("Séance d'ouverture", "Ouverture des offres"),
    },
    "turnover": {
        "en": ("Required turnover", "Annual turnover of at least"),
        "de": ("Geforderter Umsatz", "Mindestjahresumsatz"),
        "fr": ("Chiffre d'affaires exigé", "Chiffre d'affaires global minimum"),
    },
    "guarantee": {
        "en": ("Bid bond", "Security deposit"),
        "de": ("Bürgschaft", "Gewährleistungsbürgschaft"),
        "fr": ("Cautionnement", "Garantie de bonne exécution"),
    },
    "incl_vat": {
        "en": ("Gross value (incl. VAT)", "Total including VAT"),
        "de": ("Bruttoauftragswert", "Wert inkl. MwSt."),
        "fr": ("Montant toutes taxes comprises", "Estimation TTC"),
    },
    "support": {
        "en": ("Portal support", "For technical problems contact"),
        "de": ("Hotline der Vergabeplattform", "Technischer Support"),
        "fr": ("Aide technique de la plateforme", "Assistance aux entreprises"),
    },
    "review": {
        "en": ("Appeals to", "Review procedures"),
        "de": ("Zuständige Vergabekammer", "Nachprüfungsbehörde"),
        "fr": ("Recours à adresser à", "Instance de recours"),
    },
    "dates": {
        "en": ("d_mon_y_hrs", "weekday_dot_pm", "iso_t", "no_later_than"),
        "de": ("de_dots_dot", "de_weekday", "de_bis"),
        "fr": ("fr_slash_dash", "fr_heures", "fr_jour_colon"),
    },
    "amounts": {
        "en": ("spaced_code", "million_words", "code_m"),
        "de": ("de_euro_ohne", "de_ca_mio", "de_spaced"),
        "fr": ("fr_dots_code", "fr_hors_taxes", "fr_m_euro"),
    },
}

#: Lines printed at the top of every page: portals, journals and letterheads that are not the
#: notice's buyer even when they name a public body.
HEADERS: dict[str, tuple[str, ...]] = {
    "en": (
        "Procurement Portal of the Region of Valmont",
        "Tenders Electronic Daily - Supplement to the Official Journal of the EU",
        "Department for Public Procurement Services - eTendering",
        "County Purchasing Network | Public notice",
    ),
    "de": (
        "Vergabeplattform des Landes Nordmark",
        "Amtsblatt der Stadtverwaltung - Ausschreibungen",
        "Deutsches Vergabeportal - Öffentliche Bekanntmachung",
    ),
    "fr": (
        "Plateforme des achats de l'État",
        "Bulletin officiel des annonces des marchés publics",
        "Profil d'acheteur de la Région Sud - Avis",
    ),
}

#: Footers, ``{n}`` and ``{total}`` filled per page.
FOOTERS: dict[str, tuple[str, ...]] = {
    "en": ("Page {n} of {total}", "Printed from the e-tendering portal - page {n}/{total}"),
    "de": ("Seite {n} von {total}", "Ausdruck der Vergabeplattform - Seite {n}/{total}"),
    "fr": ("Page {n} sur {total}", "Document généré par la plateforme - page {n}/{total}"),
}

#: A street for the buyer's address, per language.
STREETS: dict[str, tuple[str, ...]] = {
    "en": ("Market Street", "High Street", "Civic Centre Road"),
    "de": ("Hauptstraße", "Marktplatz", "Rathausstraße"),
    "fr": ("rue de la Gare", "place de l'Hôtel de Ville", "avenue de la République"),
}

#: Prose that fills a notice out to several pages, per language.
FILLER: dict[str, tuple[str, ...]] = {
    "en": (
        "Tenderers shall submit their offers electronically. Offers received after the "
        "deadline will not be considered. The contracting authority reserves the right not to "
        "award the contract.",
        "The contract will be awarded to the most economically advantageous tender on the "
        "basis of the criteria stated in the procurement documents: quality 60 percent, price "
        "40 percent.",
        "Variants are not accepted. The procurement is covered by the Government Procurement "
        "Agreement. Electronic invoicing will be accepted.",
    ),
    "de": (
        "Die Angebote sind elektronisch über die Vergabeplattform einzureichen. Nicht "
        "form- und fristgerecht eingegangene Angebote werden ausgeschlossen.",
        "Zuschlagskriterien: Preis 70 Prozent, Qualität 30 Prozent. Nebenangebote sind nicht "
        "zugelassen. Die Vergabeunterlagen stehen zum Download bereit.",
    ),
    "fr": (
        "Les offres sont remises par voie électronique sur le profil d'acheteur. Les offres "
        "reçues hors délai ne seront pas examinées.",
        "Critères d'attribution : valeur technique 60 pour cent, prix 40 pour cent. Les "
        "variantes ne sont pas autorisées.",
    ),
}
