"""Wording pools for the "varied" and "unseen2" ... "unseen7" notices of make_corpus.py, as data.

Each field has labels per language as publishers print them, in disjoint pools: ``SEEN`` (the
"varied" split, read while the extractor's rules were written), ``HELD_OUT`` (the "unseen2"
split, written down before those rules changed) and ``HELD_OUT_3`` to ``HELD_OUT_7`` (the
"unseen3" to "unseen7" splits, each written before a later round of changes and measured once
after it). A held-out notice draws every label, date format and amount format from its pool, so
it measures wording the rules have not met, not merely new values. Once measured and looked at,
a pool is tuned against and no longer held out: a new measurement needs a new pool.
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

#: The third pool ("unseen3"), written before the extractor's second round of changes and
#: measured once after them: other synonyms again, plus date and amount formats, layouts
#: (``leader``, ``caps_above``, ``grid``) and lot tables that neither pool above uses.
HELD_OUT_3: Pool = {
    "title": {
        "en": (
            "Title attributed to the contract",
            "Solicitation title",
            "Title of the procurement",
            "Name given to the tender",
        ),
        "de": (
            "Titel der Ausschreibung",
            "Bezeichnung der Maßnahme",
            "Auftragstitel",
            "Gegenstand der Ausschreibung",
        ),
        "fr": (
            "Objet de l'achat",
            "Intitulé de l'opération",
            "Libellé du marché",
            "Titre de la consultation",
        ),
    },
    "authority": {
        "en": ("Name of the buyer", "Awarding authority", "Contracting body", "Issuing agency"),
        "de": (
            "Vergebende Stelle",
            "Bezeichnung des Auftraggebers",
            "Öffentliche Auftraggeberin",
            "Ausschreibende Behörde",
        ),
        "fr": (
            "Identification de l'acheteur",
            "Nom de l'organisme acheteur",
            "Personne publique",
            "Acheteur public",
        ),
    },
    "reference": {
        "en": ("Buyer's reference", "ITT number", "Bid number", "Procurement identifier"),
        "de": ("Kennziffer", "Verfahrensnummer", "Referenznummer", "Interne Kennung"),
        "fr": (
            "Référence interne",
            "Numéro de la procédure",
            "Référence de l'affaire",
            "Code de la consultation",
        ),
    },
    "deadline": {
        "en": (
            "Time limit for receipt of tenders or requests to participate",
            "Tenders to be returned by",
            "Proposals must be received no later than",
            "Closing date for responses",
            "Final date for receipt of bids",
        ),
        "de": (
            "Frist zur Angebotsabgabe",
            "Angebotsabgabe bis",
            "Schlusstermin für Angebote",
            "Termin für den Eingang der Angebote",
        ),
        "fr": (
            "Date et heure limite de remise des plis",
            "Limite de réception des offres",
            "Les offres doivent parvenir au plus tard le",
            "Date de clôture",
        ),
    },
    "value": {
        "en": (
            "Total value of the procurement",
            "Estimated budget",
            "Value of the contract (excl. VAT)",
            "Maximum contract value",
        ),
        "de": (
            "Geschätzter Gesamtauftragswert",
            "Auftragsvolumen",
            "Geschätzter Wert ohne MwSt.",
            "Gesamtvolumen (netto)",
        ),
        "fr": (
            "Valeur estimée du marché",
            "Montant total estimé",
            "Enveloppe financière",
            "Estimation globale",
        ),
    },
    "lot_value": {
        "en": ("Value of this lot", "Estimated value of the lot", "Lot estimate"),
        "de": ("Geschätzter Wert des Loses", "Loswert", "Volumen des Loses"),
        "fr": ("Montant estimé du lot", "Valeur du lot", "Estimation HT du lot"),
    },
    "email": {
        "en": ("Contact e-mail", "Email address", "Send enquiries to"),
        "de": ("E-Mail-Kontakt", "Mail", "Ansprechstelle E-Mail"),
        "fr": ("Adresse mail", "Courriel de contact", "E-mail"),
    },
    "cpv": {
        "en": ("Main CPV", "Common procurement vocabulary (CPV)"),
        "de": ("CPV-Hauptcode", "Gemeinsames Vokabular (CPV)"),
        "fr": ("Code CPV", "CPV principal"),
    },
    "notice_id": {
        "en": ("Notice reference", "Contract notice number", "eForms notice ID"),
        "de": ("Bekanntmachungs-Nr.", "Kennung der Bekanntmachung"),
        "fr": ("Numéro de l'avis", "Référence BOAMP"),
    },
    "publication": {
        "en": ("Date of this notice", "Published on"),
        "de": ("Veröffentlicht am", "Absendedatum"),
        "fr": ("Date d'envoi de l'avis", "Publié le"),
    },
    "questions": {
        "en": ("Deadline for requesting additional information", "Deadline for questions"),
        "de": ("Frist für Rückfragen", "Fragen bis spätestens"),
        "fr": ("Date limite pour les questions", "Demandes de renseignements jusqu'au"),
    },
    "opening": {
        "en": ("Conditions for opening of tenders", "Public bid opening"),
        "de": ("Eröffnung der Angebote", "Öffnungstermin"),
        "fr": ("Date d'ouverture des plis", "Ouverture des candidatures"),
    },
    "turnover": {
        "en": ("Minimum turnover", "Turnover requirement"),
        "de": ("Umsatz der letzten drei Jahre mindestens", "Mindestumsatz"),
        "fr": ("Chiffre d'affaires minimum requis", "CA annuel minimum"),
    },
    "guarantee": {
        "en": ("Performance bond", "Bank guarantee"),
        "de": ("Vertragserfüllungssicherheit", "Mängelbürgschaft"),
        "fr": ("Caution bancaire", "Garantie financière"),
    },
    "incl_vat": {
        "en": ("Estimated value including VAT at 20%", "Gross value"),
        "de": ("Auftragswert inkl. MwSt.", "Bruttowert"),
        "fr": ("Montant TTC", "Valeur toutes taxes comprises"),
    },
    "support": {
        "en": ("Helpdesk for the e-procurement system", "Technical assistance"),
        "de": ("Hilfe zur Vergabeplattform", "Technischer Kundendienst"),
        "fr": ("Support technique", "Hotline de la plateforme"),
    },
    "review": {
        "en": ("Body responsible for review procedures", "Complaints and appeals"),
        "de": ("Vergabekammer des Landes", "Zuständig für Nachprüfungsverfahren"),
        "fr": ("Tribunal compétent", "Organe chargé des procédures de recours"),
    },
    "dates": {
        "en": ("us_weekday_long", "dmy_dash_24h", "ordinal_day_of", "time_first_comma"),
        "de": ("de_long_weekday", "de_uhr_only", "de_iso"),
        "fr": ("fr_jour_h", "fr_dmy_h", "fr_le_dmy"),
    },
    "amounts": {
        "en": ("symbol_dec_exvat", "approx_m", "code_thousand"),
        "de": ("de_tsd", "de_euro_word", "de_zzgl_ust", "de_millionen"),
        "fr": ("fr_ht_dotted", "fr_k_euro", "fr_millions_hors_tva"),
    },
    # How a notice of this pool prints its lots, as a table (header cells per language) or as
    # a heading per lot (``{word}``, ``{n}`` and ``{title}`` filled in).
    "lot_table": {
        "en": ("Lot No.", "Description", "Estimated value"),
        "de": ("Los-Nr.", "Leistung", "Schätzwert"),
        "fr": ("N°", "Désignation du lot", "Estimation HT"),
    },
    "lot_heading": {
        "en": ("{word} {n} - {title}", "{word} No. {n}: {title}"),
        "de": ("{word} {n} - {title}", "{word} Nr. {n}: {title}"),
        "fr": ("{word} n° {n} - {title}", "{word} {n} - {title}"),
    },
}

#: The fourth pool ("unseen4"), written after "unseen3" was measured and before the rules
#: changed in answer to it; measured once, at the end. Again other synonyms, formats and lot
#: headings, and section numbers in front of labels (layout ``numbered``).
HELD_OUT_4: Pool = {
    "title": {
        "en": ("Name of the procurement", "Tender name", "Brief title", "Title of the requirement"),
        "de": ("Bezeichnung der Leistung", "Kurztitel", "Name des Vorhabens", "Titel des Auftrags"),
        "fr": (
            "Objet de la procédure",
            "Nom du marché",
            "Intitulé du projet",
            "Titre de l'appel d'offres",
        ),
    },
    "authority": {
        "en": (
            "Contracting organisation",
            "Purchasing body",
            "Buying organisation",
            "Commissioning authority",
        ),
        "de": (
            "Beschaffungsstelle",
            "Auftraggebende Stelle",
            "Name der Vergabestelle",
            "Auftraggebende Behörde",
        ),
        "fr": (
            "Nom de l'acheteur",
            "Acheteur (nom)",
            "Autorité contractante",
            "Organisme passant le marché",
        ),
    },
    "reference": {
        "en": ("Contract reference", "Reference code", "Procedure ID", "Our reference number"),
        "de": (
            "Aktenzeichen der Vergabestelle",
            "Ausschreibungs-Nr.",
            "Verfahrens-ID",
            "Vergabe-ID",
        ),
        "fr": (
            "Réf. de la procédure",
            "Numéro de référence de la consultation",
            "Identifiant de la procédure",
            "N° de dossier",
        ),
    },
    "deadline": {
        "en": (
            "Deadline for the receipt of tenders",
            "Tenders must be submitted by",
            "Submission closing date",
            "Closing time for bids",
            "Offers must reach us by",
        ),
        "de": (
            "Angebotsschluss",
            "Letzter Abgabetermin",
            "Eingangsfrist für Angebote",
            "Angebote bis spätestens",
        ),
        "fr": (
            "Date limite de soumission",
            "Date limite de remise des propositions",
            "Réception des offres au plus tard le",
            "Heure et date limites de dépôt",
        ),
    },
    "value": {
        "en": (
            "Contract value",
            "Approximate budget",
            "Estimated value (excl. VAT)",
            "Projected spend",
        ),
        "de": (
            "Geschätzter Nettowert",
            "Gesamtwert der Beschaffung",
            "Budget (netto)",
            "Voraussichtliches Auftragsvolumen",
        ),
        "fr": (
            "Valeur du marché",
            "Montant estimatif",
            "Budget estimatif",
            "Valeur totale hors TVA",
        ),
    },
    "lot_value": {
        "en": ("Value of lot", "Lot value (excl. VAT)", "Budget for this lot"),
        "de": ("Schätzwert des Loses", "Wert dieses Loses", "Losbudget"),
        "fr": ("Valeur estimée de ce lot", "Budget du lot", "Montant du lot"),
    },
    "email": {
        "en": ("Contact", "E-mail for enquiries", "Mailbox"),
        "de": ("E-Mail der Vergabestelle", "Kontakt-E-Mail", "Mailadresse"),
        "fr": ("Adresse de messagerie", "Contact courriel", "Messagerie"),
    },
    "cpv": {
        "en": ("CPV codes", "Main classification (CPV)"),
        "de": ("CPV-Klassifikation", "Haupt-CPV"),
        "fr": ("Classification principale (CPV)", "CPV"),
    },
    "notice_id": {
        "en": ("Notice ID number", "Publication no."),
        "de": ("Veröffentlichungs-Nr.", "Bekanntmachungs-Kennung"),
        "fr": ("Identifiant de l'annonce", "Numéro de publication"),
    },
    "publication": {
        "en": ("Date of publication of this notice", "Notice date"),
        "de": ("Datum der Bekanntmachung", "Veröffentlichungstag"),
        "fr": ("Date de publication de l'avis", "Mis en ligne le"),
    },
    "questions": {
        "en": ("Questions to be submitted by", "Clarification questions due"),
        "de": ("Frist für Fragen", "Bieterfragen spätestens bis"),
        "fr": ("Date limite d'envoi des questions", "Questions écrites jusqu'au"),
    },
    "opening": {
        "en": ("Tender opening date", "Opening session"),
        "de": ("Öffnungstermin der Angebote", "Angebotseröffnung"),
        "fr": ("Séance d'ouverture des plis", "Ouverture des offres le"),
    },
    "turnover": {
        "en": ("Turnover threshold", "Minimum financial turnover"),
        "de": ("Mindestumsatz jährlich", "Jahresumsatz (mindestens)"),
        "fr": ("Chiffre d'affaires annuel requis", "Chiffre d'affaires minimum"),
    },
    "guarantee": {
        "en": ("Tender security", "Performance security"),
        "de": ("Sicherheit für die Vertragserfüllung", "Bankbürgschaft"),
        "fr": ("Garantie de soumission", "Caution de bonne fin"),
    },
    "incl_vat": {
        "en": ("Total value including VAT", "Value incl. VAT"),
        "de": ("Gesamtwert inkl. MwSt.", "Brutto-Schätzwert"),
        "fr": ("Valeur TTC", "Montant estimé TTC"),
    },
    "support": {
        "en": ("Technical helpdesk", "Portal helpdesk"),
        "de": ("Support der Vergabeplattform", "Technische Hotline"),
        "fr": ("Assistance technique", "Support de la plateforme de dématérialisation"),
    },
    "review": {
        "en": ("Appeals body", "Body responsible for mediation"),
        "de": ("Nachprüfungsstelle des Bundes", "Vergabekammer beim Land"),
        "fr": ("Tribunal administratif de Lyon", "Instance chargée des recours"),
    },
    "dates": {
        "en": ("d_month_y_comma_hm", "month_d_y_24", "dmy_dots_at"),
        "de": ("de_month_um", "de_time_first", "de_slash_year"),
        "fr": ("fr_le_month_h", "fr_iso_h", "fr_dots_heures"),
    },
    "amounts": {
        "en": ("plain_post", "symbol_m_words", "code_excl"),
        "de": ("de_eur_code_netto", "de_plain_post", "de_euro_sign_netto"),
        "fr": ("fr_code_pre_ht", "fr_plain_ht", "fr_euros_hors_tva"),
    },
    "lot_table": {
        "en": ("Lot", "Lot title", "Value (excl. VAT)"),
        "de": ("Los", "Titel des Loses", "Geschätzter Wert"),
        "fr": ("Lot", "Intitulé du lot", "Valeur estimée HT"),
    },
    "lot_heading": {
        "en": ("{word} {n}. {title}", "{word} number {n} - {title}"),
        "de": ("{word} {n}. {title}", "{word} Nr. {n} - {title}"),
        "fr": ("{word} {n}. {title}", "{word} n°{n} : {title}"),
    },
}

#: The fifth pool ("unseen5"), written after "unseen4" was measured and before the rules
#: changed in answer to it; measured once, at the end.
HELD_OUT_5: Pool = {
    "title": {
        "en": (
            "Contract name and description",
            "Title of the tender",
            "Heading",
            "Procurement name",
        ),
        "de": (
            "Auftragsbezeichnung (kurz)",
            "Titel des Verfahrens",
            "Vorhaben",
            "Benennung des Vorhabens",
        ),
        "fr": ("Intitulé de la procédure", "Objet du contrat", "Titre", "Nom de la consultation"),
    },
    "authority": {
        "en": ("Contracting authority name", "Buyer organisation", "Procuring agency", "Client"),
        "de": ("Auftraggeber (Name)", "Vergabestelle (Name)", "Öffentlicher Auftraggeber / Name"),
        "fr": ("Nom du pouvoir adjudicateur", "Acheteur public (nom)", "Entité acheteuse"),
    },
    "reference": {
        "en": ("Reference ID", "Tender reference number", "Procurement number", "Solicitation ID"),
        "de": ("Vergabenummer (intern)", "Aktenzeichen (Az.)", "Verfahrensnummer (intern)"),
        "fr": ("Référence de la procédure", "Numéro de consultation", "Réf. interne"),
    },
    "deadline": {
        "en": (
            "Deadline for submission of tenders",
            "Tender closing date",
            "Bids due",
            "Submissions must be received by",
        ),
        "de": (
            "Frist für die Einreichung der Angebote",
            "Ende der Abgabefrist",
            "Angebotsabgabefrist",
            "Angebote einzureichen bis",
        ),
        "fr": (
            "Date limite de réception des propositions",
            "Remise des plis au plus tard le",
            "Date limite de dépôt des plis",
            "Clôture de la réception des offres",
        ),
    },
    "value": {
        "en": ("Estimated total contract value", "Value (excluding VAT)", "Overall budget"),
        "de": ("Geschätzter Auftragswert (netto)", "Gesamtschätzwert", "Auftragswert netto"),
        "fr": ("Montant estimé du marché", "Valeur estimée totale hors taxes", "Budget global"),
    },
    "lot_value": {
        "en": ("Estimated lot value (excl. VAT)", "Value for this lot", "Lot budget (excl. VAT)"),
        "de": ("Geschätzter Loswert", "Wert (netto)", "Schätzwert Los"),
        "fr": ("Montant estimé HT du lot", "Valeur du lot HT", "Budget prévisionnel du lot"),
    },
    "email": {
        "en": ("Contact email address", "Email for questions", "Procurement contact"),
        "de": ("Kontakt (E-Mail)", "E-Mail-Adresse der Vergabestelle", "Rückfragen an"),
        "fr": ("Adresse électronique de contact", "Courriel du service", "Contact"),
    },
    "cpv": {
        "en": ("CPV main code", "CPV code(s)"),
        "de": ("CPV-Code(s)", "Haupt-CPV-Code"),
        "fr": ("Code(s) CPV", "CPV (code principal)"),
    },
    "notice_id": {
        "en": ("Notice no.", "TED notice number"),
        "de": ("Nummer der Bekanntmachung", "TED-Nummer"),
        "fr": ("N° de l'avis de marché", "Avis TED n°"),
    },
    "publication": {
        "en": ("Date published", "Publication date of the notice"),
        "de": ("Datum der Absendung", "Bekanntmachung veröffentlicht am"),
        "fr": ("Date de parution", "Avis envoyé le"),
    },
    "questions": {
        "en": ("Deadline for clarification requests", "Closing date for questions"),
        "de": ("Frist für Bieterfragen bis", "Letzter Termin für Fragen"),
        "fr": ("Questions avant le", "Date limite de réception des questions"),
    },
    "opening": {
        "en": ("Opening of bids", "Bids will be opened on"),
        "de": ("Angebotsöffnung am", "Termin der Öffnung"),
        "fr": ("Ouverture des plis le", "Date de l'ouverture"),
    },
    "turnover": {
        "en": ("Minimum yearly turnover", "Annual turnover required"),
        "de": ("Jahresumsatz mindestens (netto)", "Mindestumsatz p. a."),
        "fr": ("Chiffre d'affaires annuel minimal", "Chiffre d'affaires exigé (annuel)"),
    },
    "guarantee": {
        "en": ("Bid security", "Performance bond required"),
        "de": ("Vertragserfüllungsbürgschaft in Höhe von", "Sicherheit"),
        "fr": ("Garantie bancaire", "Cautionnement exigé"),
    },
    "incl_vat": {
        "en": ("Value including VAT (gross)", "Gross total"),
        "de": ("Wert brutto", "Gesamtwert (brutto)"),
        "fr": ("Montant total TTC", "Valeur estimée toutes taxes"),
    },
    "support": {
        "en": ("System support", "Platform support desk"),
        "de": ("Support-Hotline", "Plattform-Hotline"),
        "fr": ("Support plateforme", "Assistance de la plateforme"),
    },
    "review": {
        "en": ("Review and appeals", "Appeals body address"),
        "de": ("Vergabekammer (Nachprüfung)", "Zuständige Nachprüfungsstelle"),
        "fr": ("Tribunal administratif compétent", "Instance de médiation"),
    },
    "dates": {
        "en": ("d_mon_y_comma", "us_slash_pm"),
        "de": ("de_dots_h", "de_month_komma"),
        "fr": ("fr_month_virgule", "fr_slash_h"),
    },
    "amounts": {
        "en": ("code_pre_nodec", "symbol_excl"),
        "de": ("de_code_pre_netto", "de_euro_word_pre"),
        "fr": ("fr_euro_word_ht", "fr_code_post_ht"),
    },
    "lot_table": {
        "en": ("Lot no.", "Title of the lot", "Estimated value"),
        "de": ("Los", "Bezeichnung des Loses", "Wert (netto)"),
        "fr": ("Lot n°", "Désignation", "Montant HT"),
    },
    "lot_heading": {
        "en": ("{word} {n} \u2013 {title}", "{word} {n}: {title}"),
        "de": ("{word} {n} \u2013 {title}", "{word}-Nr. {n}: {title}"),
        "fr": ("{word} {n} \u2013 {title}", "{word} n° {n} : {title}"),
    },
}

#: The sixth pool ("unseen6"), written after "unseen5" was measured and before the rules
#: changed in answer to it; measured once, at the end.
HELD_OUT_6: Pool = {
    "title": {
        "en": (
            "Name of the contract",
            "Contract title and scope",
            "Opportunity title",
            "Title of the opportunity",
        ),
        "de": ("Kurze Beschreibung", "Art und Umfang (Titel)", "Auftragsbenennung", "Projekttitel"),
        "fr": ("Objet de l'avis", "Intitulé du contrat", "Nom de l'opération", "Titre du projet"),
    },
    "authority": {
        "en": (
            "Contracting authority (name)",
            "Purchasing organisation",
            "Awarding entity",
            "Buyer details",
        ),
        "de": (
            "Öffentliche Auftraggeberin (Name)",
            "Vergabestelle/Auftraggeber",
            "Auftraggebende Stelle (Name)",
        ),
        "fr": ("Pouvoir adjudicateur (nom)", "Nom officiel de l'acheteur", "Acheteur concerné"),
    },
    "reference": {
        "en": ("Internal reference", "Reference no.", "Tender number", "Procurement ref."),
        "de": ("Interne Vergabenummer", "Aktenzeichen der Ausschreibung", "Vorgangs-Nr."),
        "fr": ("Numéro interne", "Référence du dossier", "N° de la procédure"),
    },
    "deadline": {
        "en": (
            "Closing date for tenders",
            "Tenders must be received no later than",
            "Deadline for bids",
            "Response deadline",
        ),
        "de": (
            "Angebotsfrist endet am",
            "Abgabefrist für Angebote",
            "Eingang der Angebote bis",
            "Schlusstermin der Angebotsabgabe",
        ),
        "fr": (
            "Date limite de remise",
            "Dépôt des offres avant le",
            "Date et heure limites de remise des offres",
            "Délai de réception des offres",
        ),
    },
    "value": {
        "en": ("Estimated value of the contract", "Total budget (excl. VAT)", "Indicative value"),
        "de": ("Geschätzter Wert (netto)", "Auftragswert (geschätzt)", "Gesamtbudget"),
        "fr": ("Valeur estimée (HT)", "Montant global estimé", "Budget total HT"),
    },
    "lot_value": {
        "en": ("Lot value (estimated)", "Estimated value of this lot", "Value of the lot"),
        "de": ("Wert des Loses (netto)", "Loswert geschätzt", "Geschätzter Wert dieses Loses"),
        "fr": ("Valeur estimée HT du lot", "Montant du lot HT", "Estimation du lot (HT)"),
    },
    "email": {
        "en": ("Email contact", "Enquiries", "E-mail (contact)"),
        "de": ("E-Mail (Kontakt)", "Kontakt per E-Mail", "E-Post"),
        "fr": ("Courriel (contact)", "Adresse e-mail", "Mail de contact"),
    },
    "cpv": {
        "en": ("CPV classification", "Main CPV code(s)"),
        "de": ("CPV-Codes (Haupt)", "CPV Hauptteil"),
        "fr": ("Codes CPV principaux", "CPV (principal)"),
    },
    "notice_id": {
        "en": ("Notice identifier", "OJ S reference"),
        "de": ("Bekanntmachungs-ID (TED)", "Kennnummer der Bekanntmachung"),
        "fr": ("Numéro d'avis", "Référence JOUE"),
    },
    "publication": {
        "en": ("Date of dispatch", "Published date"),
        "de": ("Versanddatum der Bekanntmachung", "Datum der Veröffentlichung im Amtsblatt"),
        "fr": ("Date d'envoi", "Publication le"),
    },
    "questions": {
        "en": ("Last date for clarification questions", "Questions by"),
        "de": ("Fragen spätestens bis", "Bieterfragen bis zum"),
        "fr": (
            "Date limite de réception des demandes de renseignements",
            "Questions au plus tard le",
        ),
    },
    "opening": {
        "en": ("Date of the opening of tenders", "Tenders opened on"),
        "de": ("Öffnung der Angebote am", "Angebotsöffnung (Termin)"),
        "fr": ("Séance publique d'ouverture", "Plis ouverts le"),
    },
    "turnover": {
        "en": ("Minimum turnover required", "Yearly turnover (minimum)"),
        "de": ("Mindestjahresumsatz (netto)", "Umsatz mindestens"),
        "fr": ("Chiffre d'affaires minimum exigé", "CA minimal"),
    },
    "guarantee": {
        "en": ("Guarantee required", "Bond"),
        "de": ("Bürgschaft in Höhe von", "Sicherheitsleistung (Vertragserfüllung)"),
        "fr": ("Garantie exigée", "Caution"),
    },
    "incl_vat": {
        "en": ("Gross value including VAT", "Value with VAT"),
        "de": ("Bruttowert inkl. MwSt.", "Wert inkl. USt."),
        "fr": ("Valeur TTC estimée", "Montant TTC global"),
    },
    "support": {
        "en": ("Help desk", "Support for the e-tendering system"),
        "de": ("Hotline Vergabeportal", "Technische Unterstützung"),
        "fr": ("Assistance utilisateurs", "Support technique de la plateforme"),
    },
    "review": {
        "en": ("Review procedures body", "Appeals procedures"),
        "de": ("Nachprüfung durch", "Vergabekammer zuständig"),
        "fr": ("Voies de recours", "Tribunal administratif de Nantes"),
    },
    "dates": {
        "en": ("d_month_y_hm_plain", "weekday_d_month_at"),
        "de": ("de_dots_komma_uhr", "de_weekday_month"),
        "fr": ("fr_dmy_a_h", "fr_weekday_month_h"),
    },
    "amounts": {
        "en": ("code_pre_excl", "symbol_plain"),
        "de": ("de_code_post_netto", "de_euro_ohne_ust"),
        "fr": ("fr_code_post_hors_taxes", "fr_euro_ht_plain"),
    },
    "lot_table": {
        "en": ("Lot", "Description", "Value"),
        "de": ("Los-Nr.", "Bezeichnung", "Wert"),
        "fr": ("N° lot", "Intitulé", "Estimation HT"),
    },
    "lot_heading": {
        "en": ("{word} {n} - {title}", "{word} {n}: {title}"),
        "de": ("{word} {n}: {title}", "{word} {n} - {title}"),
        "fr": ("{word} {n} : {title}", "{word} n° {n} - {title}"),
    },
}

#: The seventh pool ("unseen7"), written before the round of changes that makes the rules
#: refuse uncertain values, and measured once before any of its notices were read. It adds
#: layouts (``Label | value`` as exported from a table, labels in capitals on the value's
#: line), two distractors the other pools lack (an insurance cover amount and an award or
#: start date), German two-digit years and TEUR, Belgian HTVA and portal-style time zones.
HELD_OUT_7: Pool = {
    "title": {
        "en": (
            "Title attributed to the contract by the contracting authority",
            "Procurement subject",
            "Short description of the requirement",
            "What is being procured",
        ),
        "de": (
            "Name der Baumaßnahme",
            "Kurzbezeichnung des Auftrags",
            "Leistungsgegenstand",
            "Maßnahme (Kurztitel)",
        ),
        "fr": (
            "Objet de la mise en concurrence",
            "Désignation de la prestation",
            "Libellé de la consultation",
            "Libellé du marché public",
        ),
    },
    "authority": {
        "en": (
            "Name of buying body",
            "Procuring organisation (legal name)",
            "Legal name of the buyer",
            "Commissioning body",
        ),
        "de": (
            "Ausschreibender Auftraggeber",
            "Ausschreibendes Amt",
            "Bezeichnung des öffentlichen Auftraggebers",
            "Zuschlagserteilende Stelle",
        ),
        "fr": (
            "Organisme public acheteur",
            "Maître d'ouvrage public",
            "Nom de l'entité adjudicatrice",
            "Identification de l'organisme qui passe le marché",
        ),
    },
    "reference": {
        "en": ("Buyer reference", "File no.", "Contract ref. no.", "RFP No."),
        "de": (
            "Geschäftszeichen der Vergabestelle",
            "Vergabe-Kennziffer",
            "Ausschreibungskennung",
            "Unser Zeichen",
        ),
        "fr": (
            "Numéro de marché",
            "Réf. de la consultation",
            "Code de la procédure",
            "Dossier n°",
        ),
    },
    "deadline": {
        "en": (
            "Final date for receipt of tenders",
            "Proposals are due by",
            "Last date and time for submission",
            "Completed tenders to be returned by",
        ),
        "de": (
            "Einreichungsfrist der Angebote",
            "Angebote sind abzugeben bis",
            "Letzter Termin der Angebotsabgabe",
            "Termin für den Angebotseingang",
        ),
        "fr": (
            "Clôture des candidatures et des offres",
            "Les plis devront être déposés au plus tard le",
            "Limite de dépôt des offres",
            "Heure et date limites de réception des plis",
        ),
    },
    "value": {
        "en": (
            "Total estimated value (net of VAT)",
            "Approximate contract value",
            "Anticipated budget",
        ),
        "de": (
            "Voraussichtliche Auftragssumme",
            "Geschätzter Gesamtauftragswert (ohne MwSt.)",
            "Kostenschätzung (netto)",
        ),
        "fr": (
            "Estimation du montant du marché",
            "Valeur prévisionnelle (HT)",
            "Montant prévisionnel du marché",
        ),
    },
    "lot_value": {
        "en": (
            "Estimated value for this lot only",
            "Indicative lot value",
            "Estimated value for the lot",
        ),
        "de": ("Schätzwert dieses Loses", "Voraussichtlicher Loswert", "Loswert (ohne MwSt.)"),
        "fr": (
            "Montant prévisionnel de ce lot",
            "Estimation du lot hors taxes",
            "Valeur indicative du lot",
        ),
    },
    "email": {
        "en": ("Contact e-mail for this notice", "Send questions to", "Contact point email"),
        "de": ("E-Mail-Adresse für Rückfragen", "Ansprechpartner (E-Mail)", "Kontaktstelle E-Mail"),
        "fr": ("Adresse de courriel", "Point de contact (courriel)", "E-mail du contact"),
    },
    "cpv": {
        "en": ("CPV nomenclature", "CPV code list"),
        "de": ("CPV-Einordnung", "CPV-Nummer(n)"),
        "fr": ("Codes de la nomenclature CPV", "Code(s) CPV retenu(s)"),
    },
    "notice_id": {
        "en": ("OJEU publication no.", "Notice ref."),
        "de": ("Veröffentlichungs-Nr. (ABl. S)", "Nr. der EU-Bekanntmachung"),
        "fr": ("Numéro de parution au JOUE", "Identifiant unique de l'avis"),
    },
    "publication": {
        "en": ("Dispatch date", "Date notice published"),
        "de": ("Tag der Veröffentlichung", "Absendedatum der Bekanntmachung"),
        "fr": ("Avis mis en ligne le", "Envoyé à la publication le"),
    },
    "questions": {
        "en": ("Cut-off for clarification questions", "Last day for questions"),
        "de": ("Auskunftsersuchen bis", "Rückfragen möglich bis"),
        "fr": ("Questions écrites admises jusqu'au", "Demandes de précisions jusqu'au"),
    },
    "opening": {
        "en": ("Opening of sealed bids", "Public opening date"),
        "de": ("Submissionstermin (Öffnung)", "Eröffnungstermin der Angebote"),
        "fr": ("Ouverture des plis prévue le", "Séance d'ouverture des offres"),
    },
    "turnover": {
        "en": ("Turnover threshold (annual)", "Required minimum turnover per year"),
        "de": ("Geforderter Mindestumsatz", "Jahresumsatz (mind.)"),
        "fr": ("Chiffre d'affaires global minimal exigé", "Niveau minimal de chiffre d'affaires"),
    },
    "guarantee": {
        "en": ("Tender guarantee amount", "Security deposit required"),
        "de": ("Angebotsbürgschaft", "Erfüllungssicherheit"),
        "fr": ("Retenue de garantie prévue", "Garantie bancaire à première demande"),
    },
    "incl_vat": {
        "en": ("Value incl. VAT at 20%", "Gross amount (VAT included)"),
        "de": ("Bruttosumme (inkl. 19 % USt.)", "Bruttobetrag"),
        "fr": ("Montant toutes taxes", "Valeur TTC du marché"),
    },
    "support": {
        "en": ("Technical helpdesk (portal)", "Portal assistance"),
        "de": ("Technischer Support (Portal)", "Support des Vergabeportals"),
        "fr": ("Hotline technique", "Aide en ligne"),
    },
    "review": {
        "en": ("Body responsible for review", "Complaints"),
        "de": ("Nachprüfungsbehörde des Landes", "Rechtsbehelfsstelle"),
        "fr": ("Organe chargé des recours", "Service des recours"),
    },
    "insurance": {
        "en": ("Professional indemnity insurance of at least", "Public liability cover"),
        "de": ("Berufshaftpflichtversicherung mindestens", "Deckungssumme Haftpflicht"),
        "fr": ("Assurance responsabilité civile minimale", "Montant de l'assurance"),
    },
    "award": {
        "en": ("Expected award date", "Contract start date"),
        "de": ("Voraussichtlicher Zuschlag", "Vertragsbeginn"),
        "fr": ("Date prévisionnelle d'attribution", "Début d'exécution"),
    },
    "dates": {
        "en": ("ordinal_at_pm", "ap_style", "dmy_dots_hrs"),
        "de": ("de_two_digit_year", "de_abbr_weekday", "de_paren_uhr"),
        "fr": ("fr_dmy_dash_h", "fr_month_abbr", "fr_time_first"),
    },
    "amounts": {
        "en": ("net_of_vat", "symbol_code_post", "symbol_m_ex"),
        "de": ("de_symbol_pre", "de_zzgl_mwst", "de_teur"),
        "fr": ("fr_nbsp", "fr_htva", "fr_code_pre_hors_tva"),
    },
    "lot_table": {
        "en": ("No.", "Title of lot", "Estimate (net)"),
        "de": ("Nr.", "Losbezeichnung", "Schätzwert netto"),
        "fr": ("Numéro", "Libellé du lot", "Montant prévisionnel HT"),
    },
    "lot_heading": {
        "en": ("{word} No. {n} \u2014 {title}", "{word} no. {n} | {title}"),
        "de": ("{word} Nr. {n} \u2014 {title}", "{word} {n} ({title})"),
        "fr": ("{word} n°{n} \u2014 {title}", "{word} {n} \u2014 {title}"),
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


#: Every pool by the name make_corpus.varied takes, oldest first: each held-out pool was written
#: after the ones before it, and shares no label with them.
POOLS: dict[str, Pool] = {
    "seen": SEEN,
    "held_out": HELD_OUT,
    "held_out_3": HELD_OUT_3,
    "held_out_4": HELD_OUT_4,
    "held_out_5": HELD_OUT_5,
    "held_out_6": HELD_OUT_6,
    "held_out_7": HELD_OUT_7,
}
